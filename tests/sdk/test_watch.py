"""``ph.watch``: what it records, read back with ``create_trial``, equals what torch computes."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import profilerhub as ph
from profilerhub.debug import TensorUnavailableForStep, create_trial
from profilerhub_analysis.tensors import STATS as TABLE_STATS
from tests.support.watchtrain import ALL, Recorder, assert_trial_matches

from .fakehub import FakeHub, after_closing_calls, wait_for


def _run(torch: ModuleType, out: Path, **watch: object) -> Recorder:
    rec = Recorder(torch)
    ph.init(job="watched", output=str(out), chunk_interval_s=0.2)
    ph.watch(rec.model, rec.opt, rec.loss_fn, **watch)  # type: ignore[arg-type]
    rec.train(5)
    ph.finish()
    return rec


def test_every_collection_every_step_equals_torchs_own_statistics(torch: ModuleType, tmp_path: Path) -> None:
    rec = _run(torch, tmp_path, collections=ALL, every=1)
    trial = create_trial(str(tmp_path / "watched"))
    assert trial.collections() == sorted(ALL)
    assert trial.steps("train") == [0, 1, 2, 3, 4] and trial.steps("eval") == [0, 1, 2, 3, 4, 5]
    assert assert_trial_matches(torch, trial, rec) > 100
    assert "gradients/2.bias" not in trial.tensor_names()  # requires_grad=False: weights only
    assert "biases/2.bias" in trial.tensor_names(collection="biases")
    assert (
        trial.table.module_type("activations/1") == "Tanh"
        and trial.table.module_type("weights/0.weight") is None
    )
    lr = trial.tensor("optimizer_variables/group0:lr").values()
    assert lr == {s: pytest.approx(0.05) for s in range(5)}
    losses = trial.tensor("losses/eval").values()  # the alias: losses/loss in eval
    assert losses == {s: pytest.approx(float(rec.seen[("losses/loss", "eval", s)])) for s in range(6)}


def test_defaults_save_every_hundredth_step_and_losses_every_step(torch: ModuleType, tmp_path: Path) -> None:
    _run(torch, tmp_path)
    trial = create_trial(str(tmp_path / "watched"))
    assert trial.collections() == [
        "biases",
        "gradients",
        "labels",
        "losses",
        "optimizer_variables",
        "weights",
    ]
    assert trial.tensor("gradients/0.weight").steps() == [0]
    assert trial.tensor("losses/loss").steps() == [0, 1, 2, 3, 4]
    assert trial.tensor("losses/loss").steps(mode="eval") == [0, 1, 2, 3, 4, 5]


def test_save_config_steps_include_exclude_and_full_tensors(torch: ModuleType, tmp_path: Path) -> None:
    rec = _run(
        torch,
        tmp_path,
        collections={"gradients": ph.SaveConfig(steps=(1, 3)), "weights": {"every": 2, "start_step": 1}},
        include=[r"^activations/3$"],
        exclude=[r"4\.weight"],
        full_tensors={"include": [r"^gradients/0\.weight$"], "steps": [3]},
    )
    trial = create_trial(str(tmp_path / "watched"))
    assert trial.tensor("gradients/0.weight").steps() == [1, 3]
    assert trial.tensor("weights/0.weight").steps() == [1, 3]
    assert "weights/4.weight" not in trial.tensor_names() and "gradients/4.weight" not in trial.tensor_names()
    assert trial.tensor_names(collection="activations") == ["activations/3"]
    full = trial.tensor("gradients/0.weight").value(3)
    assert np.array_equal(full, rec.seen[("gradients/0.weight", "train", 3)].numpy())
    with pytest.raises(TensorUnavailableForStep):
        trial.tensor("gradients/0.weight").value(1)


def test_full_tensors_past_the_byte_budget_are_skipped(torch: ModuleType, tmp_path: Path) -> None:
    _run(torch, tmp_path, full_tensors={"include": ["gradients/"], "max_bytes_per_step": 300})
    trial = create_trial(str(tmp_path / "watched"))
    saved = [n for n in trial.tensor_names(collection="gradients") if _has_value(trial, n, 0)]
    assert saved and len(saved) < len(trial.tensor_names(collection="gradients"))


def _has_value(trial: object, name: str, step: int) -> bool:
    try:
        trial.tensor(name).value(step)  # type: ignore[attr-defined]
    except TensorUnavailableForStep:
        return False
    return True


def test_a_nan_stops_an_opted_in_run_at_the_next_step(torch: ModuleType, tmp_path: Path) -> None:
    rec = Recorder(torch)
    ph.init(job="nan", output=str(tmp_path), rules=["ExplodingTensor"], stop_on=["ExplodingTensor"])
    ph.watch(rec.model, rec.opt, rec.loss_fn)
    with pytest.raises(ph.StopTraining) as stop:
        rec.train(10, nan_at=3)
    assert stop.value.rule == "ExplodingTensor"
    assert ph.current_run().current_step == 3  # type: ignore[union-attr]
    ph.finish()
    trial = create_trial(str(tmp_path / "nan"))
    assert math.isnan(trial.tensor("losses/loss").values()[3])


def test_mixed_precision_statistics_are_float32(torch: ModuleType, tmp_path: Path) -> None:
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4)).to(torch.bfloat16)
    ph.init(job="bf16", output=str(tmp_path))
    ph.watch(model, collections=["weights", "activations"], every=1)
    x = torch.randn(3, 4, dtype=torch.bfloat16)
    with ph.step(0):
        out = model(x)
    ph.finish()
    trial = create_trial(str(tmp_path / "bf16"))
    got = trial.tensor("activations/0").reduction_value(0, "l2")
    assert got == pytest.approx(float(out.detach().float().norm()), rel=1e-6)


# Dynamo, tracing around the (eager, graph-breaking) activation hooks, warns about a non-leaf .grad.
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")
def test_a_compiled_model_records_the_same_names(torch: ModuleType, tmp_path: Path) -> None:
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    compiled = torch.compile(model, backend="eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ph.init(job="compiled", output=str(tmp_path))
    ph.watch(compiled, opt, collections=["weights", "gradients", "activations"], every=1)
    for i in range(2):
        with ph.step(i):
            compiled(torch.randn(5, 4)).sum().backward()
            opt.step()
            opt.zero_grad()
    ph.finish()
    trial = create_trial(str(tmp_path / "compiled"))
    grads = ["gradients/0.bias", "gradients/0.weight", "gradients/2.bias", "gradients/2.weight"]
    assert trial.tensor_names(collection="gradients") == grads
    assert trial.tensor("activations/1").steps() == [0, 1]


def test_watch_without_a_run_does_nothing_and_bad_arguments_raise(torch: ModuleType) -> None:
    model = torch.nn.Linear(2, 2)
    handle = ph.watch(model)
    handle.remove()
    with pytest.raises(ValueError, match="unknown collection"):
        ph.watch(model, collections=["weightz"])
    with pytest.raises(ValueError, match="every"):
        ph.watch(model, every=0)
    with pytest.raises(ValueError, match="mode"):
        ph.mode("test")


def test_a_failing_hook_is_logged_and_training_goes_on(
    torch: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sdk_log: pytest.LogCaptureFixture
) -> None:
    from profilerhub import _watch

    def broken(*a: object, **k: object) -> None:
        raise RuntimeError("reduction broke")

    monkeypatch.setattr(_watch, "partial", broken)
    rec = Recorder(torch)
    ph.init(job="broken", output=str(tmp_path))
    ph.watch(rec.model, rec.opt, rec.loss_fn, every=1)
    rec.train(3)
    ph.finish()
    assert [r for r in sdk_log.records if "reduction broke" in r.getMessage()]
    assert create_trial(str(tmp_path / "broken")).tensor("losses/loss").steps() == [0, 1, 2]


@pytest.mark.parametrize("path", ["native", "torch", "torch-batched", "rows"])
def test_the_table_and_the_sdk_agree_on_the_statistics(
    torch: ModuleType, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every reduction path gives numpy's reference rows: the C one (``_native``), and torch's
    per tensor, batched (what runs without a C compiler) and laid out in rows (on a GPU)."""
    from profilerhub import _native, _reduce

    assert TABLE_STATS[: len(_reduce.STATS)] == _reduce.STATS
    from profilerhub_analysis.tensors import HIST_EDGES, N_BINS, reduce_array

    assert HIST_EDGES.tolist() == _reduce.HIST_EDGES and _reduce.N_BINS == N_BINS
    if path == "native":
        assert _native.lib() is not None, "this machine has a C compiler: the native path must build"
    else:
        monkeypatch.setattr(_native, "_loaded", [None])
    rng = np.random.default_rng(3)
    values = [
        rng.normal(size=(33, 7)) * 10.0 ** rng.integers(-12, 8),
        np.array([0.0, -0.0, 1e-40, 0.96875, 2**20]),
        # Past _reduce.SMALL_ELEMENTS: reduced alone on the CPU, through one shared |x| buffer
        # (the larger first, so the next reads a slice of a buffer that held other values).
        np.where(rng.random((90, 70)) < 0.2, 0.0, rng.normal(size=(90, 70))),
        rng.normal(size=(80, 60)) * 1e-3,
        # NaN and Inf among finite values, in a block of their own and past it; all non-finite.
        np.concatenate([rng.normal(size=3000), [np.nan, np.inf, -np.inf, np.nan], rng.normal(size=1500)]),
        np.array([np.nan, np.inf]),
        # A mean large beside the spread (LayerNorm weights): the variance must not cancel.
        1.0 + rng.normal(size=5000) * 1e-4,
        np.full(7, -3.5),
    ]
    tensors = [torch.tensor(v, dtype=torch.float32) for v in values]
    tensors.append(torch.tensor(values[2], dtype=torch.float32).t()[::2])  # strided, not contiguous
    values.append(tensors[-1].numpy())
    if path == "rows":  # the GPU's path, run on the CPU
        got = _reduce.fold(torch, [*_reduce._reduce_rows(torch, tensors)])
    else:
        got = _reduce.reduce_rows(torch, tensors, batched=path == "torch-batched")
    for v, row in zip(values, got.tolist(), strict=True):
        stats, hist = reduce_array(np.asarray(v, np.float32))
        assert np.allclose(row[:10], stats[:10], rtol=2e-5, equal_nan=True), (row[:10], stats[:10])
        assert row[10:] == hist.tolist()
    half = torch.tensor(values[0], dtype=torch.float16)
    (row,) = _reduce.reduce_rows(torch, [half]).tolist()
    stats, hist = reduce_array(half.float().numpy())
    assert np.allclose(row[:10], stats[:10], rtol=2e-5, equal_nan=True) and row[10:] == hist.tolist()


def test_the_hub_down_during_the_run_loses_no_tensor(
    torch: ModuleType, fakehub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROFILERHUB_SPILL_DIR", str(tmp_path / "spill"))
    rec = Recorder(torch)
    ph.init(job="flaky", chunk_interval_s=0.05)
    ph.watch(rec.model, rec.opt, rec.loss_fn, collections=ALL, every=1)
    rec.train(2)

    def delivered() -> bool:
        return any(p.startswith("tensors/") for j in list(fakehub.jobs.values()) for p in list(j.files))

    wait_for(delivered, what="a tensors chunk delivered")
    fakehub.stop()  # the hub goes away while the run goes on
    rec.train(3, start=2)
    summary = ph.finish(timeout=1.0)
    assert summary["spilled_files"].get("tensors"), summary
    after_closing_calls()  # the hub comes back once the run's closing call has given up
    fakehub.start()
    run = ph.init(job="after")
    assert run.delivery is not None
    run.delivery.join(60)
    ph.finish(timeout=10)
    got = tmp_path / "got"
    for rel, data in fakehub.job_named("flaky").files.items():
        (got / rel).parent.mkdir(parents=True, exist_ok=True)
        (got / rel).write_bytes(data)
    trial = create_trial(str(got))
    assert trial.steps() == [0, 1, 2, 3, 4]
    assert assert_trial_matches(torch, trial, rec) > 100


def test_a_run_written_to_s3_reads_back_equal_to_torchs_statistics(
    torch: ModuleType, s3_server: dict[str, str], s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROFILERHUB_S3_ENDPOINT_URL", s3_server["endpoint_url"])
    rec = Recorder(torch)
    ph.init(job="watched-s3", output=f"s3://{s3_bucket}/team", chunk_interval_s=0.2)
    ph.watch(rec.model, rec.opt, rec.loss_fn, collections=ALL, every=1, full_tensors=[r"^gradients/0\.bias$"])
    rec.train(3)
    assert ph.finish()["completed"]
    trial = create_trial(f"s3://{s3_bucket}/team/watched-s3")
    assert assert_trial_matches(torch, trial, rec) > 60
    full = trial.tensor("gradients/0.bias").value(1)
    assert np.array_equal(full, rec.seen[("gradients/0.bias", "train", 1)].numpy())


def test_tensorboard_true_writes_the_reductions_as_scalars_and_histograms(
    torch: ModuleType, tmp_path: Path
) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    rec = Recorder(torch)
    ph.init(job="tb", output=str(tmp_path), chunk_interval_s=0.2)
    ph.watch(rec.model, rec.opt, rec.loss_fn, every=1, tensorboard=True)
    rec.train(3)
    ph.finish()
    acc = EventAccumulator(
        str(tmp_path / "tb" / "tensorboard"), size_guidance={"histograms": 0, "scalars": 0}
    )
    acc.Reload()
    l2 = [e.value for e in acc.Scalars("gradients/0.weight/l2")]
    want = [float(rec.seen[("gradients/0.weight", "train", s)].norm()) for s in range(3)]
    assert l2 == pytest.approx(want, rel=1e-5)
    assert [e.step for e in acc.Scalars("eval/losses/loss/mean")] == [0, 1, 2, 3]
    (first, *_) = acc.Histograms("weights/0.weight")
    assert first.step == 0 and first.histogram_value.num == rec.seen[("weights/0.weight", "train", 0)].numel()


def test_imbalanced_labels_trip_class_imbalance_and_balanced_ones_do_not(
    torch: ModuleType, tmp_path: Path
) -> None:
    """Real training at the defaults: ``loss_fn``'s targets are the ``labels`` collection, with each
    class's count per step, and ClassImbalance reads them."""
    from profilerhub_analysis.rules import evaluate_rules
    from profilerhub_analysis.rules.base import RuleData

    nn = torch.nn
    results = {}
    for share in (0.97, 1 / 3):
        gen = torch.Generator().manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        opt, loss_fn = torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss()
        ph.init(job=f"labels-{round(share * 100)}", output=str(tmp_path), chunk_interval_s=0.2)
        ph.watch(model, opt, loss_fn)
        seen = torch.zeros(3, dtype=torch.int64)
        for i in range(24):  # 24 x 32 = 768 labels: past the rule's 500
            with ph.step(i):
                rare = torch.rand(32, generator=gen) >= share
                y = torch.where(rare, torch.randint(1, 3, (32,), generator=gen), 0)
                loss = loss_fn(model(torch.randn(32, 8, generator=gen)), y)
                opt.zero_grad(), loss.backward(), opt.step()
                seen += torch.bincount(y, minlength=3)
        trial = create_trial(ph.finish()["location"])
        steps, counts = trial.table.class_counts("labels/loss")
        assert steps.tolist() == list(range(24)) and counts.sum(axis=0).tolist() == seen.tolist()
        (results[share],) = evaluate_rules(["ClassImbalance"], RuleData(tensors=trial.table))
    tripped, fine = results[0.97], results[1 / 3]
    assert tripped["status"] == "IssuesFound" and tripped["findings"][0]["figures"]["largest_class"] == 0, (
        tripped
    )
    assert fine["status"] == "NoIssuesFound" and fine["figures"]["checked"] == 1, fine


def test_label_counts_leave_out_ignore_index_on_both_paths(torch: ModuleType, tmp_path: Path) -> None:
    """A 1-D batch of class indices on the CPU is counted on the host, any other (here 2-D, as a
    segmentation's) with ``bincount``: the same counts, ``ignore_index``'s -100 left out."""
    nn = torch.nn
    gen = torch.Generator().manual_seed(4)
    model, loss_fn = nn.Linear(6, 4), nn.CrossEntropyLoss(ignore_index=-100)
    ph.init(job="ignored", output=str(tmp_path))
    ph.watch(model, loss_fn=loss_fn)
    targets = [torch.tensor([3, -100, 0, 3, 1, -100]), torch.tensor([[2, -100, 2], [0, 2, -100]])]
    for i, y in enumerate(targets):
        with ph.step(i):
            logits = model(torch.randn(*y.shape, 6, generator=gen))
            loss_fn(logits if y.dim() == 1 else logits.transpose(1, 2), y)
    trial = create_trial(ph.finish()["location"])
    steps, counts = trial.table.class_counts("labels/loss")
    assert steps.tolist() == [0, 1]
    for row, y in zip(counts.tolist(), targets, strict=True):
        want = torch.bincount(y[y >= 0], minlength=len(row)).tolist()
        assert row == want


def test_nothing_the_step_made_outlives_it(torch: ModuleType, tmp_path: Path) -> None:
    """Every collection every step: once a step ends, the SDK holds none of its activations,
    losses, labels or gradients (what bounds the device memory ph.watch takes)."""
    import gc
    import weakref

    rec = Recorder(torch)
    ph.init(job="held", output=str(tmp_path))
    ph.watch(rec.model, rec.opt, rec.loss_fn, collections=ALL, every=1)
    refs, memory = [], set()
    for i in range(2):
        with ph.step(i):
            x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
            out = rec.model(x)
            loss = rec.loss_fn(out, y)
            loss.backward()
            rec.opt.step()
            grads = [p.grad for p in rec.model.parameters() if p.grad is not None]
            refs += [weakref.ref(t) for t in (out, loss, y, *grads)]
            memory |= {t.data_ptr() for t in (out, loss, y, *grads)}
            rec.opt.zero_grad(set_to_none=True)
        del x, y, out, loss, grads
    rec._acts.clear()  # the Recorder's own copies of the outputs (its forward hooks'), let go too:
    gc.collect()  # one of them may sit where a freed tensor of step 0 was, as under xdist it did
    assert [r for r in refs if r() is not None] == []

    # Nor a view of them (a detached loss, say): no live tensor shares their memory.
    def shares(o: object) -> bool:
        try:
            return issubclass(type(o), torch.Tensor) and o.data_ptr() in memory  # type: ignore[attr-defined]
        except RuntimeError:  # a fake tensor (another test's torch.compile) has no memory
            return False

    assert [o for o in gc.get_objects() if shares(o)] == []
    ph.finish()


def test_dead_units_are_counted_for_relu_layers_only(torch: ModuleType, tmp_path: Path) -> None:
    """``dead_frac`` (what DeadRelu reads): the share of a ReLU layer's units active in under 1 % of
    the batch, as torch counts it; NaN for the other layers' outputs."""
    rec = _run(torch, tmp_path, collections=["activations"], every=1)
    trial = create_trial(str(tmp_path / "watched"))
    for step in range(5):
        out = rec.seen[("activations/3", "train", step)]  # the ReLU's output, batch x units
        want = float(((out > 0).sum(dim=0) < 0.01 * out.shape[0]).float().mean())
        assert trial.tensor("activations/3").reduction_value(step, "dead_frac") == pytest.approx(want)
        assert math.isnan(trial.tensor("activations/1").reduction_value(step, "dead_frac"))  # the tanh
