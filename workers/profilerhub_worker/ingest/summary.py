"""Pure functions from a job's decoded raw records to its summary (no storage, no database).

The SDK's records are summarised by ``profilerhub_analysis.sdk_records`` (re-exported here), each
PyTorch-profiler trace by the analysis engine's report; ``compact`` is what the job row keeps.
"""

from __future__ import annotations

from typing import Any

from profilerhub_analysis.ops import cpu_ops
from profilerhub_analysis.rank_activity import activity
from profilerhub_analysis.report import analyze_store
from profilerhub_analysis.rules.inputs import trace_dataloader
from profilerhub_analysis.sdk_records import (
    AnnotationRecord,
    MetricRecord,
    SystemSample,
    downsample_mean,
    pick_points,
    steps_and_annotations,
    system_metrics,
    training_metrics,
)
from profilerhub_analysis.store import EventStore


def trace_summary(name: str, store: EventStore) -> dict[str, Any]:
    """The analysis engine's report of one trace, plus its CPU operators and its activity over
    time (``rank_activity``: the join moves it into the job's all-ranks overview)."""
    return {
        "file": name,
        "report": analyze_store(store),
        "ops": cpu_ops(store),
        "dataloader": trace_dataloader(store),
        "activity": activity(store),
    }


COMPACT_TOP = 20


def job_facts(summary: dict[str, Any]) -> dict[str, Any]:
    """The few figures a jobs list shows per job: steps, ranks, GPUs used, duration (s).

    Steps are the SDK's ``ph.step`` count, else the most ``ProfilerStep#N`` of any trace; GPUs are
    the most devices any one trace ran work on; the duration is the SDK's run, else the longest
    trace span.
    """
    traces = [t.get("report", {}) for t in summary.get("traces", [])]
    steps = summary.get("steps", {}).get("count") or max(
        (len(r.get("steps") or []) for r in traces), default=0
    )
    spans = [d.get("span_us", 0) for r in traces for d in r.get("temporal") or []]
    duration = summary.get("job", {}).get("duration_s")
    if duration is None and spans:
        duration = round(max(spans) / 1e6, 3)
    return {
        "steps": int(steps),
        "ranks": len({r.get("rank", i) for i, r in enumerate(traces)}),
        "gpus": max((len(r.get("temporal") or []) for r in traces), default=0),
        "duration_s": duration,
    }


def compact(summary: dict[str, Any]) -> dict[str, Any]:
    """What the job row keeps: the summary without series, per-step items and long lists."""
    out = {k: v for k, v in summary.items() if k not in ("traces", "metrics", "system", "steps", "rules")}
    out["steps"] = {k: v for k, v in summary.get("steps", {}).items() if k != "items"}
    out["annotations"] = [
        {k: v for k, v in a.items() if k != "histogram"} for a in summary.get("annotations", [])[:COMPACT_TOP]
    ]
    out["metrics"] = {
        name: {k: v for k, v in m.items() if k not in ("series", "time_series")}
        for name, m in summary.get("metrics", {}).items()
    }
    system = summary.get("system", {})
    out["system"] = {
        "samples": system.get("samples", 0),
        "metrics": {
            name: {k: v for k, v in m.items() if k != "series"}
            for name, m in system.get("metrics", {}).items()
        },
    }
    out["traces"] = [
        {
            "file": t["file"],
            "ops": t["ops"][:COMPACT_TOP],
            "kernels": t["report"].get("kernels", [])[:COMPACT_TOP],
            "kernel_count": t["report"].get("kernel_count"),
            "launch_latency": {
                k: v for k, v in t["report"].get("launch_latency", {}).items() if k != "histogram"
            },
            "temporal": t["report"].get("temporal"),
        }
        for t in summary.get("traces", [])
    ]
    return out


__all__ = [
    "AnnotationRecord",
    "MetricRecord",
    "SystemSample",
    "compact",
    "downsample_mean",
    "job_facts",
    "pick_points",
    "steps_and_annotations",
    "system_metrics",
    "trace_summary",
    "training_metrics",
]
