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


DDP_GLOO = {"distributed_data_parallel": True, "collective_libs": ["gloo"], "compute_capabilities": [[8, 0]]}


def test_ddp_over_gloo_on_a_capable_gpu_is_told_to_use_nccl() -> None:
    rules = ["NcclBackendUnused"]
    got = {r["rule"]: r for r in evaluate_rules(rules, RuleData(tb=[brief(**DDP_GLOO)], finished=True))}
    found = got["NcclBackendUnused"]
    assert found["status"] == "IssuesFound"
    assert "gloo" in found["findings"][0]["message"] and "8.0" in found["findings"][0]["message"]
    assert [r["rule"] for r in recommend(brief(**DDP_GLOO))] == ["NcclBackendUnused"]
    for fine in (
        {**DDP_GLOO, "collective_libs": ["nccl"]},  # already NCCL
        {**DDP_GLOO, "distributed_data_parallel": False},  # no DDP
        {**DDP_GLOO, "compute_capabilities": [[3, 0]]},  # too old for NCCL (the plugin's 3.5)
        {**DDP_GLOO, "compute_capabilities": []},  # no GPU properties
    ):
        result = evaluate_rules(rules, RuleData(tb=[brief(**fine)], finished=True))[0]
        assert result["status"] == "NoIssuesFound", fine


def test_memory_near_the_gpus_limit_trips_past_the_threshold() -> None:
    gib = 2**30
    near = brief(gpu_memory=[{"device": "GPU0", "peak_bytes": 37.0 * gib, "total_bytes": 40 * gib}])  # 92.5 %
    rules = [{"rule": "MemoryNearLimit"}]
    result = evaluate_rules(rules, RuleData(tb=[near], finished=True))[0]
    assert result["status"] == "IssuesFound"
    assert result["findings"][0]["figures"]["peak_pct"] == 92.5
    assert "GPU0" in result["findings"][0]["message"] and "40.0 GiB" in result["findings"][0]["message"]
    at = brief(gpu_memory=[{"device": "GPU0", "peak_bytes": 36.0 * gib, "total_bytes": 40 * gib}])  # 90 %
    assert evaluate_rules(rules, RuleData(tb=[at], finished=True))[0]["status"] == "NoIssuesFound"
    lower = [{"rule": "MemoryNearLimit", "parameters": {"threshold": 80}}]
    assert evaluate_rules(lower, RuleData(tb=[at], finished=True))[0]["status"] == "IssuesFound"
    unknown = brief(gpu_memory=[{"device": "GPU1", "peak_bytes": 1.0, "total_bytes": None}])
    assert evaluate_rules(rules, RuleData(tb=[unknown], finished=True))[0]["status"] == "NoIssuesFound"
    none = evaluate_rules(rules, RuleData(tb=[brief()], finished=True))[0]  # no GPU memory records
    assert none["status"] == "Error" and none["missing_data"]


def test_the_facts_of_a_trace_name_its_collectives_capabilities_and_gpu_memory() -> None:
    import json

    from profilerhub_analysis.tbviews import tb_views

    def op(name: str, ts: int, dur: int) -> dict[str, Any]:
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}

    events = [
        op("ProfilerStep#1", 0, 100),
        op("DistributedDataParallel.forward", 1, 50),
        op("gloo:all_reduce", 60, 10),
        *({"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": t,
           "args": {"Device Type": 1, "Device Id": 0, "Bytes": b, "Total Allocated": a, "Total Reserved": a}}
          for t, b, a in ((10, 100, 100), (20, 900, 1000), (30, -500, 500))),
    ]  # fmt: skip
    props = [{"id": 0, "name": "GPU", "totalGlobalMem": 1100, "computeMajor": 8, "computeMinor": 6}]
    doc = json.dumps({"traceEvents": events, "deviceProperties": props}).encode()
    facts = tb_views(doc)["tb_facts"]
    assert facts["collective_libs"] == ["gloo"] and facts["distributed_data_parallel"] is True
    assert facts["compute_capabilities"] == [[8, 6]]
    assert facts["gpu_memory"] == [{"device": "GPU0", "peak_bytes": 1000.0, "total_bytes": 1100}]


def test_tensor_cores_the_plugins_names_miss_count_as_used() -> None:
    """A Hopper GPU's GEMMs (nvjet) are not on the plugin's list: its figure reads 0 %, the current
    one does not, and nothing is recommended (``tensor_cores.TC_KERNEL_CURRENT``)."""
    hopper = brief(tc_used_pct=0.0, tc_used_current_pct=60.0, compute_major=9, device_name="NVIDIA H200")
    assert statuses(hopper)["TensorCoresUnused"]["status"] == "NoIssuesFound"
    unused = brief(tc_used_pct=0.0, tc_used_current_pct=0.0, compute_major=9, device_name="NVIDIA H200")
    assert statuses(unused)["TensorCoresUnused"]["status"] == "IssuesFound"
