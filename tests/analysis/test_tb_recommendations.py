"""The TensorBoard plugin's recommendations as rules: each at its threshold, on a trace brief made
for it, through the rules engine as a job configures them; and without a trace, no data."""

from __future__ import annotations

from typing import Any

import pytest

from profilerhub_analysis.rules import evaluate_rules
from profilerhub_analysis.rules.base import RuleData
from profilerhub_analysis.rules.tb_recommendations import recommend

AVG = {"kernel_us": 50.0, "memcpy_us": 0.0, "memset_us": 0.0, "communication_us": 0.0, "runtime_us": 5.0,
       "dataloader_us": 0.0, "cpu_exec_us": 40.0, "other_us": 5.0, "total_us": 100.0}  # fmt: skip
FACTS = {"data_parallel": False, "distributed_data_parallel": False, "devices": 1, "compute_major": 8,
         "device_name": "NVIDIA A100-SXM4-40GB", "tc_used_pct": 20.0, "tc_eligible_pct": 40.0}  # fmt: skip


def brief(avg: dict[str, float] | None = None, **facts: Any) -> dict[str, Any]:
    return {
        "file": "torch/rank0.json.gz",
        "rank": 0,
        "average": {**AVG, **(avg or {})},
        "facts": {**FACTS, **facts},
    }


def statuses(*briefs: dict[str, Any], finished: bool = True, **params: Any) -> dict[str, dict[str, Any]]:
    names = ["DataLoaderTime", "CommunicationTime", "TensorCoresUnused", "DataParallelUsed"]
    configs = [{"rule": n, "parameters": params.get(n, {})} for n in names]
    return {r["rule"]: r for r in evaluate_rules(configs, RuleData(tb=list(briefs), finished=finished))}


def test_a_healthy_trace_trips_none() -> None:
    assert {n: r["status"] for n, r in statuses(brief()).items()} == dict.fromkeys(
        ["DataLoaderTime", "CommunicationTime", "TensorCoresUnused", "DataParallelUsed"], "NoIssuesFound"
    )
    assert recommend(brief()) == []


@pytest.mark.parametrize(
    ("rule", "trace", "figure"),
    [
        ("DataLoaderTime", brief({"dataloader_us": 6.0, "cpu_exec_us": 34.0}), ("dataloader_pct", 6.0)),
        (
            "CommunicationTime",
            brief({"communication_us": 11.0, "kernel_us": 39.0}),
            ("communication_pct", 11.0),
        ),
        ("TensorCoresUnused", brief(tc_used_pct=0.0), ("tc_eligible_pct", 40.0)),
        ("DataParallelUsed", brief(data_parallel=True, devices=2), ("devices", 2)),
    ],
)
def test_each_recommendation_trips_past_the_plugins_threshold(
    rule: str, trace: dict[str, Any], figure: tuple[str, float]
) -> None:
    result = statuses(trace)[rule]
    assert result["status"] == "IssuesFound", result
    assert result["findings"][0]["figures"][figure[0]] == figure[1]
    assert result["findings"][0]["message"].startswith("rank 0: ")
    assert result["recommendation"]
    assert [r["rule"] for r in recommend(trace)] == [rule]


def test_thresholds_are_parameters_and_the_boundary_does_not_trip() -> None:
    at_five = brief({"dataloader_us": 5.0, "cpu_exec_us": 35.0})
    assert statuses(at_five)["DataLoaderTime"]["status"] == "NoIssuesFound"  # > 5 %, as the plugin
    lower = statuses(at_five, DataLoaderTime={"threshold": 4})["DataLoaderTime"]
    assert lower["status"] == "IssuesFound"


def test_tensor_cores_are_not_asked_of_an_old_gpu_or_an_amd_one() -> None:
    assert statuses(brief(tc_used_pct=0.0, compute_major=6))["TensorCoresUnused"]["status"] == "NoIssuesFound"
    amd = brief(tc_used_pct=0.0, compute_major=9, device_name="AMD Instinct MI250X")
    assert statuses(amd)["TensorCoresUnused"]["status"] == "NoIssuesFound"


def test_without_a_trace_the_rules_have_no_data_and_wait_while_the_job_runs() -> None:
    done = statuses()
    assert all(r["status"] == "Error" and r["missing_data"] for r in done.values())
    assert all(r["status"] == "InProgress" for r in statuses(finished=False).values())
    cpu = brief(tc_used_pct=None, tc_eligible_pct=None)  # a CPU-only trace: no kernel
    cpu_rules = statuses(cpu)
    assert cpu_rules["DataLoaderTime"]["status"] == "NoIssuesFound"
    assert cpu_rules["TensorCoresUnused"]["missing_data"] is True
