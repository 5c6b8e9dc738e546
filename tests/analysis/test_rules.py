"""Each profiler rule on synthetic series that should and should not trigger it (edges
included), on the real traces in ../shared/traces, and the configuration checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from profilerhub_analysis.report import analyze_file
from profilerhub_analysis.rules import RULES, RuleParamError, check_configs, evaluate_rules
from profilerhub_analysis.rules.base import RuleData, windows
from profilerhub_analysis.rules.inputs import from_columns
from profilerhub_analysis.rules.profiler_report import MEMBERS
from profilerhub_analysis.rules.registry import overall_status

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
MS = 1_000_000
STEP = 100 * MS  # 10 Hz sampling, as the SDK's default


def series(n: int = 2000, **columns: Any) -> RuleData:
    """System samples every 100 ms; a scalar is a constant column; ``gpuN`` util and ``gpuN_mem`` %."""
    t = np.arange(n, dtype=np.int64) * STEP + 10**18
    cols: dict[str, np.ndarray] = {}
    for name, value in columns.items():
        v = np.broadcast_to(np.asarray(value, np.float64), (n,)).copy()
        if name.endswith("_mem"):
            gpu = name.removesuffix("_mem")
            cols[f"{gpu}.mem_used_bytes"], cols[f"{gpu}.mem_total_bytes"] = v, np.full(n, 100.0)
        elif name.startswith("gpu"):
            cols[f"{name}.util_percent"] = v
        else:
            cols[name] = v
    return from_columns(t, cols, job={"start_ns": int(t[0])})


def run(rule: str, data: RuleData, **params: Any) -> dict[str, Any]:
    return evaluate_rules([{"rule": rule, "parameters": params}], data)[0]


# LowGPUUtilization -----------------------------------------------------------------------------


def test_low_gpu_utilization_finds_an_underused_gpu_with_its_time_range() -> None:
    out = run("LowGPUUtilization", series(gpu0=20.0))
    assert out["status"] == "IssuesFound"
    assert out["finding_count"] == 2  # windows [1000,1500) and [1500,2000)
    first = out["findings"][0]
    assert first["figures"]["p95"] == 20.0 and first["figures"]["kind"] == "underutilized"
    assert first["end_ns"] - first["start_ns"] == 499 * STEP
    assert out["evidence"]["gpu0.util_percent"] and out["recommendation"]


def test_low_gpu_utilization_finds_fluctuation_but_not_a_busy_gpu() -> None:
    swing = np.where(np.arange(2000) % 2, 95.0, 0.0)
    assert run("LowGPUUtilization", series(gpu0=swing))["findings"][0]["figures"]["kind"] == "fluctuating"
    assert run("LowGPUUtilization", series(gpu0=90.0))["status"] == "NoIssuesFound"


def test_low_gpu_utilization_threshold_edge_is_strictly_below() -> None:
    assert run("LowGPUUtilization", series(gpu0=70.0))["status"] == "NoIssuesFound"
    assert run("LowGPUUtilization", series(gpu0=69.9))["status"] == "IssuesFound"


def test_low_gpu_utilization_on_a_cpu_job_is_an_error_saying_why() -> None:
    out = run("LowGPUUtilization", series(cpu_percent=50.0))
    assert out["status"] == "Error" and "no GPU samples" in out["reason"]


def test_patience_longer_than_the_run_evaluates_nothing() -> None:
    done = run("LowGPUUtilization", series(n=900, gpu0=1.0))
    assert done["status"] == "NoIssuesFound" and "not enough data" in done["reason"]
    live = series(n=900, gpu0=1.0)
    live.finished = False
    assert run("LowGPUUtilization", live)["status"] == "InProgress"


def test_windows_skip_patience_and_keep_a_last_half_window() -> None:
    assert windows(1750, 1000, 500).tolist() == [[1000, 1500], [1500, 1750]]
    assert windows(1749, 1000, 500).tolist() == [[1000, 1500]]
    assert windows(1000, 1000, 500).tolist() == []


# CPUBottleneck / IOBottleneck ------------------------------------------------------------------


def test_cpu_bottleneck_when_cpu_busy_and_gpu_idle_most_of_the_time() -> None:
    cpu = np.where(np.arange(2000) < 1700, 95.0, 30.0)
    out = run("CPUBottleneck", series(cpu_percent=cpu, gpu0=5.0))
    assert out["status"] == "IssuesFound"
    assert out["figures"]["bottleneck_percent"] == 70.0  # 700 of the 1000 after patience
    assert out["findings"][0]["figures"]["datapoints"] == 700


def test_cpu_bottleneck_not_triggered_when_the_gpu_is_busy_or_share_is_at_threshold() -> None:
    assert run("CPUBottleneck", series(cpu_percent=95.0, gpu0=50.0))["status"] == "NoIssuesFound"
    cpu = np.where(np.arange(2000) < 1500, 95.0, 30.0)  # exactly 50 % after patience
    assert run("CPUBottleneck", series(cpu_percent=cpu, gpu0=5.0))["status"] == "NoIssuesFound"
    cpu = np.where(np.arange(2000) < 1501, 95.0, 30.0)
    assert run("CPUBottleneck", series(cpu_percent=cpu, gpu0=5.0))["status"] == "IssuesFound"


def test_io_bottleneck_reads_iowait_and_says_when_it_is_missing() -> None:
    assert run("IOBottleneck", series(cpu_iowait_percent=80.0, gpu0=2.0))["status"] == "IssuesFound"
    assert run("IOBottleneck", series(cpu_iowait_percent=10.0, gpu0=2.0))["status"] == "NoIssuesFound"
    missing = run("IOBottleneck", series(cpu_percent=10.0, gpu0=2.0))
    assert missing["status"] == "Error" and "cpu_iowait_percent" in missing["reason"]


# StepOutlier ----------------------------------------------------------------------------------


def steps(durations_ms: list[float]) -> RuleData:
    d = np.array(durations_ms) * MS
    start = np.concatenate([[0], np.cumsum(d)[:-1]]).astype(np.int64) + 10**18
    data = from_columns(np.zeros(0, np.int64), {}, steps=(start, d.astype(np.int64), np.arange(len(d))))
    data.job_start_ns = 10**18
    return data


def test_step_outlier_needs_more_than_n_outliers_slow_steps() -> None:
    base = [10.0] * 200
    eleven = base + [100.0] * 11
    out = run("StepOutlier", steps(eleven))
    assert out["status"] == "IssuesFound" and out["finding_count"] == 11
    assert out["findings"][0]["figures"]["duration_ms"] == 100.0
    assert run("StepOutlier", steps(base + [100.0] * 10))["status"] == "NoIssuesFound"
    assert run("StepOutlier", steps(base + [100.0]), n_outliers=0)["status"] == "IssuesFound"


def test_step_outlier_without_steps_says_how_to_record_them() -> None:
    out = run("StepOutlier", series(cpu_percent=1.0))
    assert out["status"] == "Error" and "ph.step" in out["reason"]
    assert run("StepOutlier", steps([10.0, 10.0]))["status"] == "NoIssuesFound"  # too few to judge


# BatchSize ------------------------------------------------------------------------------------


def test_batch_size_when_cpu_gpu_and_memory_all_low() -> None:
    out = run("BatchSize", series(cpu_percent=20.0, gpu0=30.0, gpu0_mem=10.0))
    assert out["status"] == "IssuesFound" and out["findings"][0]["figures"]["gpu_memory_p95"] == 10.0
    assert run("BatchSize", series(cpu_percent=20.0, gpu0=30.0, gpu0_mem=80.0))["status"] == "NoIssuesFound"
    assert run("BatchSize", series(cpu_percent=20.0, gpu0=70.0, gpu0_mem=10.0))["status"] == "NoIssuesFound"


# Dataloader ------------------------------------------------------------------------------------


def loader(
    fetch_ms: list[float], step_ms: float = 20.0, workers: int | None = None, cores: int = 8
) -> RuleData:
    n = len(fetch_ms)
    start = np.arange(n, dtype=np.int64) * 1000 * MS + 10**18
    cols = {f"cpu{i}_percent": np.full(3, 10.0) for i in range(cores)}
    data = from_columns(
        np.arange(3, dtype=np.int64) * STEP + 10**18, cols,
        steps=(start, np.full(n, int(step_ms * MS)), np.arange(n)),
        dataloader=(start, (np.array(fetch_ms) * MS).astype(np.int64)),
        job={"dataloader_workers": workers},
    )  # fmt: skip
    return data


def test_dataloader_catches_a_stalled_fetch_and_a_loader_dominated_step() -> None:
    stalled = run("Dataloader", loader([2.0] * 50 + [500.0], step_ms=20.0))
    assert stalled["status"] == "IssuesFound"
    assert any(f["figures"].get("fetch_ms") == 500.0 for f in stalled["findings"])
    heavy = run("Dataloader", loader([15.0] * 50, step_ms=20.0))
    assert heavy["status"] == "IssuesFound" and heavy["figures"]["fetch_percent_of_steps"] == 75.0
    assert run("Dataloader", loader([2.0] * 50, step_ms=20.0))["status"] == "NoIssuesFound"


def test_dataloader_worker_count_against_cores_edges() -> None:
    assert run("Dataloader", loader([1.0], workers=2, cores=8))["status"] == "IssuesFound"  # 25 %
    assert run("Dataloader", loader([1.0], workers=6, cores=8))["status"] == "NoIssuesFound"  # 75 %
    assert run("Dataloader", loader([1.0], workers=16, cores=8))["status"] == "NoIssuesFound"  # 200 %
    assert run("Dataloader", loader([1.0], workers=17, cores=8))["status"] == "IssuesFound"


def test_dataloader_without_any_data_loading_range_says_what_to_annotate() -> None:
    out = run("Dataloader", series(cpu_percent=1.0))
    assert out["status"] == "Error" and "ph.annotate('dataloader')" in out["reason"]


# GPUMemoryIncrease / MaxInitializationTime / OverallSystemUsage / LoadBalancing ---------------


def test_gpu_memory_increase_finds_a_jump_but_not_a_flat_or_slow_line() -> None:
    jump = np.where(np.arange(2000) < 1500, 20.0, 40.0)
    out = run("GPUMemoryIncrease", series(gpu0=50.0, gpu0_mem=jump))
    assert out["status"] == "IssuesFound" and out["findings"][0]["figures"]["rise"] == 20.0
    assert run("GPUMemoryIncrease", series(gpu0=50.0, gpu0_mem=30.0))["status"] == "NoIssuesFound"
    slow = np.linspace(10, 60, 2000)
    assert run("GPUMemoryIncrease", series(gpu0=50.0, gpu0_mem=slow))["status"] == "NoIssuesFound"


def test_max_initialization_time_measures_job_start_to_first_step() -> None:
    data = steps([10.0] * 5)
    data.job_start_ns = int(data.step_start_ns[0]) - 21 * 60 * 10**9
    out = run("MaxInitializationTime", data)
    assert out["status"] == "IssuesFound" and out["figures"]["initialization_minutes"] == 21.0
    assert run("MaxInitializationTime", data, threshold=21)["status"] == "NoIssuesFound"


def test_overall_system_usage_reports_quantiles_and_never_triggers() -> None:
    out = run("OverallSystemUsage", series(cpu_percent=np.arange(2000) % 101))
    assert out["status"] == "NoIssuesFound" and out["figures"]["cpu_percent"]["max"] == 100.0


def test_load_balancing_compares_gpu_utilisation_distributions() -> None:
    out = run("LoadBalancing", series(gpu0=90.0, gpu1=15.0))
    assert out["status"] == "IssuesFound" and out["figures"]["distances"]["gpu0~gpu1"] == 1.0
    assert run("LoadBalancing", series(gpu0=90.0, gpu1=91.0))["status"] == "NoIssuesFound"
    assert run("LoadBalancing", series(gpu0=90.0))["reason"] == "one GPU: nothing to balance"


# ProfilerReport and configuration --------------------------------------------------------------


def test_profiler_report_runs_every_rule_and_takes_rule_param_overrides() -> None:
    data = series(cpu_percent=95.0, gpu0=5.0)
    out = run("ProfilerReport", data)
    assert [r["rule"] for r in out["rules"]] == [spec.name for spec in MEMBERS]  # the profiler rules
    assert out["status"] == "IssuesFound" and out["figures"]["CPUBottleneck"] == "IssuesFound"
    relaxed = run("ProfilerReport", data, CPUBottleneck_threshold=100, LowGPUUtilization_threshold_p95=1,
                  BatchSize_gpu_threshold_p95=1)  # fmt: skip
    assert relaxed["figures"]["CPUBottleneck"] == "NoIssuesFound"
    assert next(r for r in relaxed["rules"] if r["rule"] == "CPUBottleneck")["parameters"]["threshold"] == 100


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        (["NoSuchRule"], "unknown rule"),
        ([{"rule": "CPUBottleneck", "parameters": {"treshold": 1}}], "no parameter 'treshold'"),
        ([{"rule": "CPUBottleneck", "parameters": {"threshold": 101}}], "between 0 and 100"),
        ([{"rule": "StepOutlier", "parameters": {"n_outliers": 1.5}}], "whole number"),
        ([{"rule": "ProfilerReport", "parameters": {"Nope_x": 1}}], "<Rule>_<param>"),
        ([{"rule": "ProfilerReport", "parameters": {"CPUBottleneck_x": 1}}], "no parameter 'x'"),
        (["CPUBottleneck", "CPUBottleneck"], "twice"),
        (["CPUBottleneck"] * 21, "at most 20"),
        ([{"rule": "CPUBottleneck", "parameters": {"threshold": True}}], "must be a number"),
    ],
)
def test_bad_rule_configurations_are_refused_naming_the_problem(configs: list[Any], message: str) -> None:
    with pytest.raises(RuleParamError, match=message.replace("(", r"\(")):
        check_configs(configs)


def test_every_rule_has_sagemakers_defaults() -> None:
    defaults = {name: {p.name: p.default for p in spec.params} for name, spec in RULES.items()}
    assert defaults["LowGPUUtilization"] == {
        "threshold_p95": 70,
        "threshold_p5": 10,
        "window": 500,
        "patience": 1000,
    }
    assert defaults["CPUBottleneck"] == {
        "threshold": 50,
        "gpu_threshold": 10,
        "cpu_threshold": 90,
        "patience": 1000,
    }
    assert defaults["IOBottleneck"] == {
        "threshold": 50,
        "gpu_threshold": 10,
        "io_threshold": 50,
        "patience": 1000,
    }
    assert defaults["StepOutlier"] == {"stddev": 3, "n_outliers": 10}
    batch = {"cpu_threshold_p95": 70, "gpu_threshold_p95": 70, "gpu_memory_threshold_p95": 70}
    assert defaults["BatchSize"] == batch | {"patience": 1000, "window": 500}
    assert defaults["GPUMemoryIncrease"] == {"increase": 5, "patience": 1000, "window": 10}
    assert defaults["MaxInitializationTime"] == {"threshold": 20}
    assert defaults["LoadBalancing"] == {"threshold": 0.5, "patience": 1000}
    assert {"min_threshold": 70, "max_threshold": 200}.items() <= defaults["Dataloader"].items()


# Real traces ------------------------------------------------------------------------------------


def trace_data(path: Path) -> RuleData:
    return from_columns(np.zeros(0, np.int64), {}, traces=[{"report": analyze_file(path)}])


def test_real_gpu_trace_gives_trace_derived_gpu_utilisation_and_steps() -> None:
    path = TRACES / "hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
    data = trace_data(path)
    assert data.gpu_util and all(s.source == "trace" for s in data.gpu_util.values())
    out = run("LowGPUUtilization", data, patience=0, window=10)
    assert out["status"] in ("IssuesFound", "NoIssuesFound")
    busy = data.gpu_util["gpu0"].values
    low = np.percentile(busy[:10], 95) < 70
    assert (out["status"] == "IssuesFound") == bool(
        low
        or any(
            np.percentile(busy[i : i + 10], 95) < 70 or np.percentile(busy[i : i + 10], 5) < 10
            for i in range(0, len(busy), 10)
        )
    )


def test_real_traces_steps_feed_step_outlier() -> None:
    data = trace_data(TRACES / "hta/tests/data/trace_filter/sampled_rank-0.json.gz")
    assert len(data.step_dur_ns) == 2 and data.step_source == "trace"
    out = run("StepOutlier", data)
    assert out["status"] == "NoIssuesFound" and "at least 3" in out["reason"]


def test_real_cpu_trace_without_numbered_steps_or_gpu_says_what_is_missing() -> None:
    data = trace_data(TRACES / "torch-cpu/mlp_cpu_10steps.pt.trace.json")
    assert run("StepOutlier", data)["reason"].startswith("no steps recorded")
    assert run("CPUBottleneck", data)["reason"].startswith("no GPU samples: the job ran on CPU")
    report = run("ProfilerReport", data)
    assert (report["status"], report["missing_data"]) == ("Error", True)
    assert report["reason"].startswith("no rule could run")
    assert {(r["status"], r["missing_data"]) for r in report["rules"]} == {("Error", True)}
    assert overall_status([report]) == "Error"  # the job: nothing could be checked


def test_profiler_report_tells_a_member_that_failed_from_members_short_of_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    from profilerhub_analysis.rules import profiler_report

    def broken(data: RuleData, params: dict[str, Any]) -> Any:
        raise ZeroDivisionError("a bug")

    members = [
        dataclasses.replace(m, evaluate=broken) if m.name == "StepOutlier" else m
        for m in profiler_report.MEMBERS
    ]
    monkeypatch.setattr(profiler_report, "MEMBERS", members)
    data = trace_data(TRACES / "torch-cpu/mlp_cpu_10steps.pt.trace.json")
    report = run("ProfilerReport", data)
    assert (report["status"], report["missing_data"]) == ("Error", False)
    assert report["reason"] == "StepOutlier failed (each says how)"
    (step,) = [r for r in report["rules"] if r["rule"] == "StepOutlier"]
    assert step["reason"] == "the rule failed: ZeroDivisionError: a bug" and not step["missing_data"]
    assert overall_status([report]) == "Error"


def test_the_overall_status_counts_a_rule_short_of_data_only_when_no_rule_ran() -> None:
    ran, short, broken = (
        {"status": "NoIssuesFound"},
        {"status": "Error", "missing_data": True},
        {"status": "Error", "missing_data": False},
    )
    assert overall_status([ran, short]) == "NoIssuesFound"  # a CPU job's GPU rules are no error
    assert overall_status([short, short]) == "Error"  # nothing could be checked at all
    assert overall_status([ran, short, broken]) == "Error"  # a rule that failed is one
    assert overall_status([short, {"status": "IssuesFound"}]) == "IssuesFound"
    assert overall_status([]) == "NoIssuesFound"
