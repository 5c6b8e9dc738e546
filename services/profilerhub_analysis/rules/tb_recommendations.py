"""The TensorBoard profiler plugin's recommendations as rules (its ``RunProfileData.analyze``).

Each reads, per trace, the plugin's step-time roles and a few facts (``RuleData.tb``, written by
ingest from ``profilerhub_analysis.tbviews``) with the plugin's own thresholds as defaults:

    DataLoaderTime       DataLoader > ``threshold`` (5) % of the mean step: use DataLoader workers
    CommunicationTime    communication > ``threshold`` (10) % of the mean step: compress or
                         accumulate gradients, or a larger batch
    TensorCoresUnused    a GPU of compute capability >= 7 ran no tensor-core kernel while
                         tensor-core eligible operators launched > ``threshold`` (0) % of the
                         kernel time: use automatic mixed precision (not said of AMD GPUs,
                         whose matrix-core kernels the plugin's NVIDIA name list cannot see)
    DataParallelUsed     ``nn.DataParallel`` over more than one GPU: use DistributedDataParallel
    NcclBackendUnused    DistributedDataParallel whose collectives are not NCCL's (gloo) on a GPU
                         of compute capability >= 3.5: use the NCCL backend
    MemoryNearLimit      a GPU's peak allocated memory above ``threshold`` (90) % of its memory
                         (``totalGlobalMem``): activation checkpointing or mixed precision

A job without a trace (or traced before these views existed) has no data for them: ``Error`` with
``missing_data`` once the job has finished, ``InProgress`` while it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from profilerhub_analysis.rules.base import (
    Finding,
    Param,
    RuleData,
    RuleResult,
    RuleSpec,
    RuleStatus,
    error,
    pct,
)

AMP_URL = "https://pytorch.org/docs/stable/amp.html"
Check = Callable[[dict[str, Any], dict[str, Any]], tuple[str, dict[str, Any]] | None]
"""(trace brief, parameters) -> (finding message, figures) when the trace trips the rule, else None."""


def _share(brief: dict[str, Any], role: str) -> float | None:
    avg = brief.get("average")
    if not avg or not avg.get("total_us"):
        return None
    return 100.0 * avg[role] / avg["total_us"]


def _dataloader(brief: dict[str, Any], params: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    share = _share(brief, "dataloader_us")
    if share is None or share <= params["threshold"]:
        return None
    return f"{share:.1f} % of the step time is in the DataLoader", {"dataloader_pct": pct(share)}


def _communication(brief: dict[str, Any], params: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    share = _share(brief, "communication_us")
    if share is None or share <= params["threshold"]:
        return None
    return f"{share:.1f} % of the step time is in communication", {"communication_pct": pct(share)}


def _tensor_cores(brief: dict[str, Any], params: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    f = brief.get("facts") or {}
    major, eligible = f.get("compute_major"), f.get("tc_eligible_pct")
    used = f.get("tc_used_current_pct", f.get("tc_used_pct"))  # the plugin's names miss Hopper's
    if major is None or major < 7 or used is None or used > 0 or eligible is None:
        return None
    if any(w in (f.get("device_name") or "") for w in ("AMD", "Instinct", "Radeon")):
        return None  # the plugin's tensor-core names are NVIDIA's: an AMD GPU's matrix cores go unseen
    if eligible <= params["threshold"]:
        return None
    return (
        f"no kernel used tensor cores, while tensor-core eligible operators launched {eligible:.0f} % "
        f"of the kernel time (compute capability {major}.x has tensor cores)",
        {"tc_eligible_pct": pct(eligible), "tc_used_pct": 0.0, "compute_major": major},
    )


def _data_parallel(brief: dict[str, Any], params: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    f = brief.get("facts") or {}
    if not f.get("data_parallel") or f.get("devices", 0) <= 1:
        return None
    return f"nn.DataParallel over {f['devices']} GPUs", {"devices": f["devices"]}


def _nccl(brief: dict[str, Any], params: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    f = brief.get("facts") or {}
    libs = f.get("collective_libs") or []
    if not f.get("distributed_data_parallel") or "nccl" in libs:
        return None
    capable = [c for c in f.get("compute_capabilities") or [] if (c[0], c[1]) >= (3, 5)]
    if not capable:
        return None
    used = " and ".join(libs) or "no collective library the trace names"
    return (
        f"DistributedDataParallel communicates with {used} on GPUs that NCCL supports "
        f"(compute capability {capable[0][0]}.{capable[0][1]})",
        {"collective_libs": ",".join(libs)},
    )


def _memory(brief: dict[str, Any], params: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    for gpu in (brief.get("facts") or {}).get("gpu_memory") or []:
        total, peak = gpu.get("total_bytes"), gpu.get("peak_bytes")
        if not total or peak is None or 100.0 * peak / total <= params["threshold"]:
            continue
        share = 100.0 * peak / total
        return (
            f"{gpu['device']}'s peak allocated memory is {share:.1f} % of its {total / 2**30:.1f} GiB",
            {"device": gpu["device"], "peak_pct": pct(share), "peak_bytes": peak, "total_bytes": total},
        )
    return None


def _needs_kernels(brief: dict[str, Any]) -> bool:
    return (brief.get("facts") or {}).get("tc_used_pct") is not None


def _rule(
    name: str,
    params: tuple[Param, ...],
    check: Check,
    recommendation: str,
    has_data: Callable[[dict[str, Any]], bool],
) -> RuleSpec:
    def evaluate(data: RuleData, given: dict[str, Any]) -> RuleResult:
        briefs = [b for b in data.tb if has_data(b)]
        if not briefs:
            if not data.finished:
                return RuleResult(name, RuleStatus.InProgress, "waiting for a profiler trace", given)
            why = "no GPU kernel in the job's traces" if data.tb else "no profiler trace with these views"
            return error(name, given, why)
        findings = []
        for b in briefs:
            hit = check(b, given)
            if hit is not None:
                message, figures = hit
                where = f"rank {b['rank']}" if b.get("rank") is not None else (b.get("file") or "the trace")
                findings.append(Finding(f"{where}: {message}", figures={**figures, "trace": b.get("file")}))
        if not findings:
            return RuleResult(name, RuleStatus.NoIssuesFound, f"checked {len(briefs)} trace(s)", given)
        return RuleResult(
            name,
            RuleStatus.IssuesFound,
            findings[0].message,
            given,
            findings,
            dict(findings[0].figures),
            {},
            recommendation,
        )

    return RuleSpec(name, params, evaluate, recommendation.split(".")[0])


def _traced(brief: dict[str, Any]) -> bool:
    return brief.get("average") is not None


DATALOADER = _rule(
    "DataLoaderTime",
    (Param("threshold", 5.0, 0, 100, description="% of the mean step time in the DataLoader"),),
    _dataloader,
    "Load data in parallel with the step: set num_workers (and pin_memory) on the DataLoader, "
    "https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading",
    _traced,
)
COMMUNICATION = _rule(
    "CommunicationTime",
    (Param("threshold", 10.0, 0, 100, description="% of the mean step time in communication"),),
    _communication,
    "Communicate less per step: gradient compression (DDP communication hooks), gradient "
    "accumulation or a larger batch (both raise the effective batch size; watch convergence).",
    _traced,
)
TENSOR_CORES = _rule(
    "TensorCoresUnused",
    (Param("threshold", 0.0, 0, 100, description="% of kernel time launched by eligible operators"),),
    _tensor_cores,
    f"Use tensor cores: automatic mixed precision (torch.autocast with float16 or bfloat16), {AMP_URL}",
    _needs_kernels,
)
DATA_PARALLEL = _rule(
    "DataParallelUsed",
    (),
    _data_parallel,
    "Use DistributedDataParallel instead of DataParallel for multi-GPU training (one process per GPU).",
    _needs_kernels,
)

NCCL = _rule(
    "NcclBackendUnused",
    (),
    _nccl,
    'Use the NCCL backend for DistributedDataParallel on GPUs (init_process_group(backend="nccl")): '
    "it is the fastest for GPU collectives, https://pytorch.org/docs/stable/distributed.html#backends",
    _needs_kernels,
)
MEMORY = _rule(
    "MemoryNearLimit",
    (Param("threshold", 90.0, 0, 100, description="% of the GPU's memory at the peak allocation"),),
    _memory,
    "Make room on the GPU: activation (gradient) checkpointing, "
    "https://pytorch.org/docs/stable/checkpoint.html, or automatic mixed precision, " + AMP_URL,
    lambda b: bool((b.get("facts") or {}).get("gpu_memory")),
)

MEMBERS = (DATALOADER, COMMUNICATION, TENSOR_CORES, DATA_PARALLEL, NCCL, MEMORY)


def brief(views: dict[str, Any]) -> dict[str, Any]:
    """What these rules read of one trace's views (``tbviews.tb_views``), and its distributed
    figures for the per-rank table: ingest keeps it in the trace's summary entry (``tb_brief``)."""
    overview = views.get("tb_overview")
    dist = views.get("tb_distributed")
    return {
        "average": overview["average"] if overview else None,
        "facts": views.get("tb_facts"),
        "distributed": dist["average"] if dist else None,
    }


def recommend(trace_brief: dict[str, Any]) -> list[dict[str, Any]]:
    """The plugin's recommendations for one trace, at the default thresholds: each rule that found
    something, as its JSON result (``message`` = the finding, ``recommendation`` = what to do)."""
    data = RuleData(tb=[trace_brief])
    out = []
    for spec in MEMBERS:
        result = spec.evaluate(data, {p.name: p.default for p in spec.params})
        if result.status == RuleStatus.IssuesFound:
            out.append({"rule": spec.name, "message": result.reason, "recommendation": result.recommendation})
    return out


__all__ = ["MEMBERS", "brief", "recommend"]
