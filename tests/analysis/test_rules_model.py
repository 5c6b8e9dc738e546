"""The model rules on TensorTables built from the SDK's own record format (``tensor_records.record``):
one healthy run on which every tensor rule finds nothing, and for each rule a run built to trip
it, which it must catch at a plausible step, naming the tensors and the step range."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from profilerhub_analysis.rules import RULES, RuleParamError, check_configs, evaluate_rules
from profilerhub_analysis.rules.base import RuleData
from profilerhub_analysis.rules.model import TENSOR_RULES
from profilerhub_analysis.tensor_records import record
from profilerhub_analysis.tensors import TensorTable

T0 = 1_700_000_000 * 10**9
STEP_NS = 50_000_000


@dataclass
class Run:
    """A small MLP's tensors over ``steps`` train steps, healthy unless a knob says otherwise.
    Each knob is ``(from_step, value)`` or None."""

    steps: int = 100
    eval_every: int = 5
    seed: int = 0
    grad_scale: tuple[int, float] | None = None
    nan_loss: int | None = None
    val_rise: int | None = None
    flat_loss: bool = False
    lr: float = 0.01
    tanh_gain: float = 0.5
    relu_zeros: float = 0.5
    fc2_std: float = 1.2
    weight_std: float = 0.1
    frozen_from: int | None = None
    label_share: float = 0.5
    extra: dict[str, Any] = field(default_factory=dict)

    def loss(self, s: int, rng: np.random.Generator) -> float:
        if self.flat_loss:
            return float(np.log(10))  # a 10-class model that learns nothing
        return 0.2 + 2.0 * float(np.exp(-s / 30)) + 0.002 * float(rng.standard_normal())

    def records(self) -> list[dict[str, Any]]:
        rng = np.random.default_rng(self.seed)
        w1 = rng.standard_normal((16, 8)) * self.weight_std
        out, eval_step = [], 0
        for s in range(self.steps):
            g, gb = rng.standard_normal((16, 8)) * 0.01, rng.standard_normal(8) * 0.01
            if self.grad_scale and s >= self.grad_scale[0]:
                g, gb = g * self.grad_scale[1], gb * self.grad_scale[1]
            x = rng.standard_normal((32, 16))
            relu = np.maximum(rng.standard_normal((32, 16)) - _shift(self.relu_zeros), 0)
            relu[:, : round(16 * max(0.0, self.relu_zeros - 0.5) * 2)] = 0  # dead units (dead_frac)
            loss = self.loss(s, rng)
            if self.nan_loss is not None and s >= self.nan_loss:
                loss, g = float("nan"), np.full_like(g, np.nan)
            frozen = self.frozen_from is not None and s >= self.frozen_from
            update = np.zeros_like(w1) if frozen else -self.lr * g
            labels = (rng.random(64) >= self.label_share).astype(np.int64)
            tensors = {
                "weights/fc1.weight": w1,
                "biases/fc1.bias": np.zeros(8),
                "gradients/fc1.weight": g,
                "gradients/fc1.bias": gb,
                "activations/fc1": x,
                "activations/fc2": rng.standard_normal((32, 16)) * self.fc2_std,
                "activations/act.relu": relu,
                "activations/act.tanh": np.tanh(rng.standard_normal((32, 16)) * self.tanh_gain),
                "activations/act.sigmoid": 1 / (1 + np.exp(-rng.standard_normal((32, 16)))),
                "losses/loss": np.array(loss),
                "optimizer_variables/fc1.weight:update": update,
                "labels/loss": labels,
            } | self.extra
            out.append(record("train", s, tensors, ts_ns=T0 + s * STEP_NS))
            w1 = w1 + update
            if (s + 1) % self.eval_every == 0:
                val = self.loss(s, rng) + 0.01
                if self.val_rise is not None and s >= self.val_rise:
                    val += 0.05 * (s - self.val_rise)
                for _ in range(2):
                    out.append(record("eval", eval_step, {"losses/loss": np.array(val)}, global_step=s,
                                      ts_ns=T0 + s * STEP_NS + 1))  # fmt: skip
                    eval_step += 1
        return out

    def data(self) -> RuleData:
        n, key = self.steps, repr(self)
        if key not in _TABLES:  # a table is only read: one per distinct run
            _TABLES[key] = TensorTable.from_records(self.records())
        return RuleData(
            tensors=_TABLES[key],
            step_numbers=np.arange(n, dtype=np.int64),
            step_start_ns=T0 + np.arange(n, dtype=np.int64) * STEP_NS,
            step_dur_ns=np.full(n, STEP_NS - 1000, np.int64),
            job_start_ns=T0,
            job_end_ns=T0 + n * STEP_NS,
        )


_TABLES: dict[str, TensorTable] = {}


def _shift(zeros: float) -> float:
    """The offset that makes max(N(0,1) - shift, 0) zero with probability ``zeros``."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(zeros)


def run(rule: str, data: RuleData, **params: Any) -> dict[str, Any]:
    return evaluate_rules([{"rule": rule, "parameters": params}], data)[0]


@pytest.fixture(scope="module")
def healthy() -> RuleData:
    return Run().data()


def test_a_healthy_run_trips_no_tensor_rule(healthy: RuleData) -> None:
    results = evaluate_rules(list(TENSOR_RULES), healthy)
    assert {r["rule"]: (r["status"], r["reason"]) for r in results if r["status"] != "NoIssuesFound"} == {}
    assert all(r["figures"]["checked"] > 0 for r in results)


def test_a_job_without_tensors_is_missing_data_and_in_progress_while_it_runs() -> None:
    for finished, status in ((True, "Error"), (False, "InProgress")):
        results = evaluate_rules(list(TENSOR_RULES), RuleData(finished=finished))
        assert {r["status"] for r in results} == {status}
        if finished:
            assert all(r["missing_data"] and "ph.watch" in r["reason"] for r in results)


def _first(result: dict[str, Any]) -> dict[str, Any]:
    assert result["status"] == "IssuesFound", result["reason"]
    assert result["recommendation"]
    return result["findings"][0]


def test_vanishing_gradient_names_the_layer_and_the_step_it_fell_below_the_threshold() -> None:
    out = run("VanishingGradient", Run(grad_scale=(40, 1e-7)).data())
    f = _first(out)
    assert (f["step_start"], f["step_end"], f["mode"]) == (40, 99, "train")
    assert f["tensors"][0].startswith("gradients/fc1.") and f["figures"]["mean_abs_grad"] < 1e-7
    assert {g["tensors"][0] for g in out["findings"]} == {"gradients/fc1.weight", "gradients/fc1.bias"}
    assert "at step 40" in out["reason"] and "fc1.weight" in out["reason"]
    assert f["start_ns"] == T0 + 40 * STEP_NS  # the ph.step range of those steps
    assert (
        run("VanishingGradient", Run(grad_scale=(40, 1e-7)).data(), threshold=1e-12)["status"]
        == "NoIssuesFound"
    )


def test_exploding_tensor_catches_a_nan_loss_and_gradients_and_only_nan_ignores_inf() -> None:
    out = run("ExplodingTensor", Run(nan_loss=60).data())
    f = _first(out)
    assert out["reason"].startswith("at step 60:")  # on the train axis, eval findings included
    assert f["step_start"] == 60 and {t for g in out["findings"] for t in g["tensors"]} >= {
        "gradients/fc1.weight", "losses/loss"}  # fmt: skip
    inf = Run(extra={"activations/big": np.array([np.inf, 1.0])}).data()
    assert run("ExplodingTensor", inf)["status"] == "IssuesFound"
    assert run("ExplodingTensor", inf, only_nan=True)["status"] == "NoIssuesFound"
    assert (
        run("ExplodingTensor", Run(nan_loss=60).data(), collection_names="activations")["status"]
        == "NoIssuesFound"
    )


def test_a_finding_on_another_ranks_series_names_that_rank() -> None:
    """A rank job's table may hold only the other rank's rows so far (rank 0's job while its own
    series have not arrived, rank 1's merged in): its finding says rank 1, and so does the
    webhook, not the rank of the job that read it (seen in CI: ``ranks: [0]`` for rank 1's NaN)."""
    from profilerhub_worker.ingest.actions import rule_payload

    rows = [
        record("train", s, {"gradients/w": np.array([np.nan if s >= 5 else 1.0])}, rank=1) for s in range(8)
    ]
    out = run("ExplodingTensor", RuleData(tensors=TensorTable.from_records(rows)))
    assert _first(out)["figures"]["rank"] == 1
    run_of_two = {"world_size": 2, "jobs": [{"rank": 0, "job_id": "j0"}, {"rank": 1, "job_id": "j1"}]}
    assert rule_payload({"job_id": "j0"}, out, False, run_of_two)["rule"]["ranks"] == [1]
    assert "rank" not in _first(run("ExplodingTensor", Run(nan_loss=60).data()))["figures"]  # one process


def test_overfit_when_the_validation_loss_pulls_away_after_the_start_step() -> None:
    data = Run(val_rise=50).data()
    f = _first(run("Overfit", data))
    assert 50 <= f["step_start"] <= 70 and f["figures"]["ratio"] > 0.1
    assert run("Overfit", data, start_step=200)["status"] == "NoIssuesFound"
    assert run("Overfit", data, patience=100)["status"] == "NoIssuesFound"


def test_overfit_without_eval_losses_says_to_compute_them_under_eval_mode() -> None:
    table = TensorTable.from_records([record("train", s, {"losses/loss": np.array(1.0)}) for s in range(5)])
    out = run("Overfit", RuleData(tensors=table))
    assert out["status"] == "Error" and out["missing_data"] and 'ph.mode("eval")' in out["reason"]


def test_overtraining_when_validation_stalls_for_patience_evaluations_while_training_improves() -> None:
    f = _first(run("Overtraining", Run(val_rise=20, steps=120).data()))
    assert f["figures"]["evaluations_since_best"] >= 10 and f["step_start"] <= 25
    assert (
        run("Overtraining", Run(val_rise=20, steps=120).data(), patience_validation=50)["status"]
        == "NoIssuesFound"
    )


def test_loss_not_decreasing_on_a_flat_loss_checks_eval_first_then_train() -> None:
    out = run("LossNotDecreasing", Run(flat_loss=True).data())
    f = _first(out)
    assert f["mode"] == "eval" and out["figures"]["mode"] == "eval"
    assert _first(run("LossNotDecreasing", Run(flat_loss=True).data(), mode="train"))["mode"] == "train"
    assert run("LossNotDecreasing", Run(flat_loss=True).data(), mode="predict")["status"] == "Error"
    short = run("LossNotDecreasing", Run(flat_loss=True, steps=30).data(), num_steps=100)
    assert short["status"] == "NoIssuesFound" and short["reason"].startswith("not enough data")


def test_weight_update_ratio_flags_updates_too_small_and_too_large() -> None:
    small = _first(run("WeightUpdateRatio", Run(frozen_from=30).data()))
    assert (small["step_start"], small["figures"]["too"]) == (30, "small")
    large = _first(run("WeightUpdateRatio", Run(lr=1e4).data()))
    assert large["figures"]["too"] == "large" and large["step_start"] == 0


def test_saturated_activation_finds_a_tanh_layer_at_its_ends() -> None:
    f = _first(run("SaturatedActivation", Run(tanh_gain=20).data()))
    assert f["tensors"] == ["activations/act.tanh"] and f["figures"]["saturated_percent"] > 50


def test_dead_relu_from_the_share_of_zero_outputs() -> None:
    f = _first(run("DeadRelu", Run(relu_zeros=0.9).data()))
    assert f["tensors"] == ["activations/act.relu"] and f["step_start"] == 0
    assert run("DeadRelu", Run(relu_zeros=0.9).data(), threshold_layer=90)["status"] == "NoIssuesFound"


def test_poor_weight_initialization_when_activation_variance_differs_across_layers() -> None:
    out = run("PoorWeightInitialization", Run(fc2_std=0.01).data())
    f = _first(out)
    assert set(f["tensors"]) == {"activations/fc1", "activations/fc2"} and f["step_end"] < 10
    assert (
        run("PoorWeightInitialization", Run(fc2_std=0.01).data(), threshold=1e5)["status"] == "NoIssuesFound"
    )


def test_poor_weight_initialization_when_gradients_are_narrow_and_the_loss_does_not_move() -> None:
    out = run("PoorWeightInitialization", Run(grad_scale=(0, 1e-3), flat_loss=True).data())
    assert any(f["figures"]["check"] == "gradient_range" for f in out["findings"]), out["reason"]


def test_tensor_variance_above_max_and_below_min_and_a_bound_switched_off() -> None:
    big = Run(weight_std=1000).data()
    assert _first(run("TensorVariance", big))["figures"]["too"] == "high"
    assert run("TensorVariance", big, max_threshold=None)["status"] == "NoIssuesFound"
    const = Run(extra={"weights/const": np.full((4, 4), 0.5)}).data()
    assert _first(run("TensorVariance", const))["tensors"] == ["weights/const"]


def test_all_zero_on_a_zero_weight_but_not_on_zero_biases() -> None:
    f = _first(run("AllZero", Run(weight_std=0).data()))
    assert f["tensors"] == ["weights/fc1.weight"]
    assert run("AllZero", Run().data(), collection_names="biases")["status"] == "IssuesFound"


def test_unchanged_tensor_once_the_weights_stop_moving_for_num_steps() -> None:
    f = _first(run("UnchangedTensor", Run(frozen_from=60).data()))
    assert f["tensors"] == ["weights/fc1.weight"] and f["step_start"] == 60
    assert run("UnchangedTensor", Run(frozen_from=98).data(), num_steps=5)["status"] == "NoIssuesFound"


def test_class_imbalance_counts_binary_labels_exactly() -> None:
    f = _first(run("ClassImbalance", Run(label_share=0.97).data()))
    assert f["figures"]["largest_class"] == 0 and f["figures"]["imbalance"] > 10
    few = run("ClassImbalance", Run(label_share=0.97).data(), samples=10**9)
    assert few["status"] == "NoIssuesFound" and few["reason"].startswith("not enough data")


def test_stalled_training_between_steps_at_the_end_and_live_without_tensors() -> None:
    n = 20
    starts = T0 + np.arange(n, dtype=np.int64) * 10**9
    starts[10:] += 3600 * 10**9  # an hour's hang after step 9
    data = RuleData(step_numbers=np.arange(n), step_start_ns=starts, step_dur_ns=np.full(n, 10**8, np.int64),
                    job_start_ns=T0, job_end_ns=int(starts[-1]) + 10**9)  # fmt: skip
    out = run("StalledTrainingRule", data)
    assert out["status"] == "IssuesFound" and out["findings"][0]["figures"]["stalled_s"] > 3500
    assert run("StalledTrainingRule", data, threshold=7200)["status"] == "NoIssuesFound"
    live = RuleData(step_numbers=np.arange(3), step_start_ns=T0 + np.arange(3) * 10**9,
                    step_dur_ns=np.full(3, 10**8, np.int64), job_start_ns=T0, finished=False,
                    now_ns=T0 + 4000 * 10**9)  # fmt: skip
    out = run("StalledTrainingRule", live)
    assert out["status"] == "IssuesFound" and out["findings"][-1]["figures"]["ongoing"]
    assert run("StalledTrainingRule", RuleData(finished=True))["missing_data"]


def test_model_rules_have_sagemakers_names_and_defaults() -> None:
    defaults = {
        name: {p.name: p.default for p in RULES[name].params}
        for name in (*TENSOR_RULES, "StalledTrainingRule")
    }
    assert defaults["VanishingGradient"] == {"threshold": 1e-7}
    assert defaults["ExplodingTensor"]["only_nan"] is False
    assert {"start_step": 0, "patience": 1, "ratio_threshold": 0.1}.items() <= defaults["Overfit"].items()
    assert defaults["Overtraining"] == {"patience_train": 5, "patience_validation": 10, "delta": 0.1}
    assert {"num_steps": 10, "diff_percent": 0, "mode": ""}.items() <= defaults["LossNotDecreasing"].items()
    assert defaults["WeightUpdateRatio"] == {"large_threshold": 10, "small_threshold": 1e-8, "epsilon": 1e-9}
    sat = {"threshold_tanh": 0.97, "threshold_sigmoid": 0.97, "ratio_threshold": 0.5}
    assert sat.items() <= defaults["SaturatedActivation"].items()
    assert {"threshold_inactivity": 1.0, "threshold_layer": 50.0}.items() <= defaults["DeadRelu"].items()
    poor = {"threshold": 10, "distribution_range": 0.001, "patience": 5, "steps": 10}
    assert poor.items() <= defaults["PoorWeightInitialization"].items()
    assert {"num_steps": 3, "rtol": 1e-5, "atol": 1e-8}.items() <= defaults["UnchangedTensor"].items()
    assert defaults["AllZero"]["threshold"] == 100 and defaults["StalledTrainingRule"] == {"threshold": 1800}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"rule": "ExplodingTensor", "parameters": {"only_nan": 1}}, "true or false"),
        ({"rule": "ExplodingTensor", "parameters": {"tensor_regex": "(["}}, "not a regular expression"),
        ({"rule": "LossNotDecreasing", "parameters": {"mode": "sideways"}}, "must be one of"),
        ({"rule": "Overfit", "parameters": {"patience": 0}}, "between 1"),
        ({"rule": "TensorVariance", "parameters": {"max_threshold": "big"}}, "must be a number"),
    ],
)
def test_bad_model_rule_parameters_are_refused_naming_the_problem(
    config: dict[str, Any], message: str
) -> None:
    with pytest.raises(RuleParamError, match=message):
        check_configs([config])


def test_sagemaker_style_string_flags_are_accepted() -> None:
    assert check_configs([{"rule": "ExplodingTensor", "parameters": {"only_nan": "True"}}])
    assert run("ExplodingTensor", Run(nan_loss=60).data(), only_nan="true")["parameters"]["only_nan"] is True


def test_the_sdk_knows_every_rule_the_hub_runs() -> None:
    from profilerhub._config import RULE_NAMES

    assert list(RULE_NAMES) == list(RULES)


def test_the_reports_model_section_lists_findings_with_their_steps_and_plots_the_losses() -> None:
    from profilerhub_analysis.html_report import render_report

    data = Run(grad_scale=(40, 1e-7)).data()
    results = {"status": "IssuesFound", "rules": evaluate_rules(["VanishingGradient", "Overfit"], data)}
    html = render_report({"job": {"name": "vanish"}}, results, None, data.tensors)
    model = html[html.index('<section id="model">') :]
    assert "<h3>VanishingGradient</h3>" in model and "40–99" in model and "gradients/fc1.weight" in model
    assert "Recommendation:" in model and "Losses by mode" in model and "loss (eval)" in model
    assert "<script" not in html
    bare = render_report({"job": {"name": "no-watch"}}, {"status": "NoIssuesFound", "rules": []}, None)
    assert "No model rule ran and no tensors were recorded" in bare
