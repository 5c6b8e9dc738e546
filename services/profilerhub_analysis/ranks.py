"""A directory of per-rank traces: one report per rank, the aggregate, and stragglers."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from profilerhub_analysis.build import load_trace
from profilerhub_analysis.errors import TraceFormatError
from profilerhub_analysis.launch import launch_latencies, summarize_latencies
from profilerhub_analysis.report import analyze_store

TRACE_SUFFIXES = (".json", ".json.gz")
#: A rank is a straggler when its metric is this much (fraction) above the median over ranks.
STRAGGLER_THRESHOLD = 0.10


def find_traces(directory: str | Path) -> list[Path]:
    """Trace files under ``directory`` (recursively): ``*.json`` and ``*.json.gz``, sorted."""
    root = Path(directory)
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES))


def analyze_directory(
    paths: Iterable[Path],
    top: int | None = None,
    max_bytes: int | None = None,
    progress: Callable[[Path], None] | None = None,
) -> dict[str, Any]:
    """Analyse each trace as one rank; stores are dropped after each, so memory stays per-trace.

    Files that are not traces are listed under ``unreadable`` (an error only if none is readable);
    a trace over the size limit is still an error.
    """
    reports: list[dict[str, Any]] = []
    latencies: list[np.ndarray] = []
    full_kernels: list[list[dict[str, Any]]] = []
    unreadable: list[dict[str, str]] = []
    for path in paths:
        if progress:
            progress(path)
        try:
            store = load_trace(path, max_bytes)
        except TraceFormatError as exc:  # e.g. a stray non-trace .json beside the traces
            unreadable.append({"file": str(path), "error": exc.message})
            continue
        report = analyze_store(store)
        full_kernels.append(report["kernels"])
        if top is not None:
            report["kernels"] = report["kernels"][:top]
        latencies.append(launch_latencies(store)[0])
        reports.append(report)
        del store
    if not reports:
        first = unreadable[0]["error"] if unreadable else "no traces"
        raise TraceFormatError(f"no readable trace among {len(unreadable)} files; first error: {first}")
    _assign_ranks(reports)
    agg = aggregate(reports, full_kernels, latencies)
    if top is not None:
        agg["kernels"] = agg["kernels"][:top]
    return {"ranks": reports, "aggregate": agg, "stragglers": stragglers(reports), "unreadable": unreadable}


def _assign_ranks(reports: list[dict[str, Any]]) -> None:
    ranks = [r.get("rank") for r in reports]
    if None in ranks or len(set(ranks)) != len(ranks):
        for i, r in enumerate(reports):
            r["rank"] = i
    reports.sort(key=lambda r: r["rank"])


def _merge(rows: Iterable[dict[str, Any]], key: Callable[[dict[str, Any]], Any]) -> dict[Any, dict[str, Any]]:
    merged: dict[Any, dict[str, Any]] = {}
    for row in rows:
        k = key(row)
        m = merged.get(k)
        if m is None:
            merged[k] = dict(row)
            continue
        m["count"] += row["count"]
        m["total_us"] += row["total_us"]
        for field, pick in (("min_us", min), ("max_us", max)):
            if field in m:
                m[field] = pick(m[field], row[field])
        if "bytes" in m:
            vals = [v for v in (m["bytes"], row["bytes"]) if v is not None]
            m["bytes"] = sum(vals) if vals else None
            m["events_without_bytes"] += row["events_without_bytes"]
    for m in merged.values():
        if "mean_us" in m:
            m["mean_us"] = m["total_us"] / m["count"] if m["count"] else None
    return merged


def aggregate(
    reports: list[dict[str, Any]],
    kernels: list[list[dict[str, Any]]],
    latencies: list[np.ndarray],
) -> dict[str, Any]:
    """Sums over ranks (counts, times, bytes), pooled launch latencies, per-rank temporal rows."""
    merged_kernels = sorted(
        _merge((k for ks in kernels for k in ks), lambda r: r["name"]).values(),
        key=lambda r: (-r["total_us"], r["name"]),
    )
    kinds = {
        key: sum(r["kernel_kinds"][key] for r in reports)
        for key in ("compute_us", "communication_us", "memory_us")
    }
    memory = list(_merge((m for r in reports for m in r["memory_ops"]), lambda r: r["kind"]).values())
    for m in memory:
        timed_ns = m["total_us"] * 1000.0
        m["bandwidth_gbps"] = m["bytes"] / timed_ns if m["bytes"] and timed_ns else None
    sync_rows = (s for r in reports for s in r["sync_ops"])
    sync = list(_merge(sync_rows, lambda r: (r["name"], r["side"])).values())
    all_lat = np.concatenate(latencies) if latencies else np.zeros(0, dtype=np.int64)
    launch = summarize_latencies(all_lat)
    launch["unmatched_gpu_ops"] = sum(r["launch_latency"]["unmatched_gpu_ops"] for r in reports)
    temporal = [dict(t, rank=r["rank"]) for r in reports for t in r["temporal"]]
    return {
        "ranks": len(reports),
        "events": sum(r["events"] for r in reports),
        "kernels": merged_kernels,
        "kernel_count": sum(k["count"] for k in merged_kernels),
        "kernel_time_us": sum(k["total_us"] for k in merged_kernels),
        "kernel_kinds": kinds,
        "launch_latency": launch,
        "temporal": temporal,
        "memory_ops": sorted(memory, key=lambda m: m["kind"]),
        "sync_ops": sorted(sync, key=lambda s: -s["total_us"]),
        "steps": _steps_across_ranks(reports),
    }


def _steps_across_ranks(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_step: dict[int, list[float]] = {}
    for r in reports:
        for s in r["steps"]:
            by_step.setdefault(s["step"], []).append(s["duration_us"])
    return [
        {"step": step, "ranks": len(d), "max_duration_us": max(d), "mean_duration_us": sum(d) / len(d)}
        for step, d in sorted(by_step.items())
    ]


def _rank_metrics(report: dict[str, Any]) -> dict[str, float]:
    metrics: dict[str, float] = {}
    durations = [s["duration_us"] for s in report["steps"]]
    if durations:
        metrics["step_time_us"] = float(statistics.median(durations))
    if report["temporal"]:
        metrics["compute_us"] = float(sum(t["compute_us"] for t in report["temporal"]))
        metrics["gpu_busy_us"] = float(sum(t["span_us"] - t["idle_us"] for t in report["temporal"]))
    return metrics


def stragglers(reports: list[dict[str, Any]], threshold: float = STRAGGLER_THRESHOLD) -> dict[str, Any]:
    """Ranks whose median step time, compute time or GPU busy time is more than ``threshold``
    (fraction) above the median of that metric over all ranks that have it."""
    per_rank = {r["rank"]: _rank_metrics(r) for r in reports}
    metrics: dict[str, Any] = {}
    found: list[dict[str, Any]] = []
    for name in ("step_time_us", "compute_us", "gpu_busy_us"):
        values = {rank: m[name] for rank, m in per_rank.items() if name in m}
        if len(values) < 2:
            continue
        med = statistics.median(values.values())
        metrics[name] = {"median": med, "by_rank": [{"rank": k, "value": v} for k, v in values.items()]}
        for rank, v in values.items():
            if med > 0 and v > med * (1.0 + threshold):
                found.append({"rank": rank, "metric": name, "value": v, "median": med, "ratio": v / med})
    return {"threshold_pct": threshold * 100.0, "metrics": metrics, "stragglers": found}


def rank_table(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Per rank (one report each, in the given order): median step time, GPU utilisation
    (busy / span over its devices), communication, idle, compute and kernel time; and the
    stragglers (``stragglers``)."""
    rows = []
    for i, r in enumerate(reports):
        durations = [s["duration_us"] for s in r.get("steps", [])]
        temporal = r.get("temporal", [])
        span = sum(t["span_us"] for t in temporal)
        idle = sum(t["idle_us"] for t in temporal)
        rows.append(
            {
                "index": i,
                "file": r.get("source"),
                "rank": r.get("rank") if r.get("rank") is not None else i,
                "steps": len(durations),
                "step_time_us": float(statistics.median(durations)) if durations else None,
                "gpu_utilization_pct": 100.0 * (span - idle) / span if span else None,
                "communication_us": r["kernel_kinds"]["communication_us"],
                "idle_us": idle if temporal else None,
                "compute_us": sum(t["compute_us"] for t in temporal) if temporal else None,
                "kernel_time_us": r["kernel_time_us"],
            }
        )
    ranked = [dict(r, rank=row["rank"]) for r, row in zip(reports, rows, strict=True)]
    return {"ranks": rows, "stragglers": stragglers(ranked)}


__all__ = ["STRAGGLER_THRESHOLD", "aggregate", "analyze_directory", "find_traces", "rank_table", "stragglers"]
