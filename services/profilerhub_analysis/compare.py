"""Two runs side by side (``profilerhub compare``, the app's compare page).

A *profile* is what comparing needs of one run, small enough to store at ingest: its report
(``analyze_store``) and its event totals by name (``op_totals``). ``compare(base, test)`` then
gives

- ``summary``: headline figures (step time, GPU utilisation, idle, kernel time...) with the delta;
- ``kernels``: per kernel name, count and time on each side with the delta and % change;
- ``ops``: per event name over every complete event (HTA's ``TraceDiff.compare_traces`` grouping:
  by name across categories, the ``Trace`` span excluded), whole traces, no step trimming;
- ``added`` / ``removed``: names present on one side only.

``kernels`` and ``ops`` are sorted by impact: the absolute time delta, largest first.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

import numpy as np

from profilerhub_analysis.store import EventStore, Kind

#: Headline figures of a profile (see ``headline``), in display order.
SUMMARY_METRICS = (
    "step_time_us",
    "steps",
    "gpu_utilization_pct",
    "gpu_busy_us",
    "gpu_idle_us",
    "kernel_time_us",
    "kernel_count",
    "communication_us",
    "memory_us",
    "launch_latency_p50_us",
    "events",
)


def op_totals(store: EventStore) -> dict[str, list[Any]]:
    """Count and summed duration (µs) per event name over the complete events (``Trace`` spans
    left out), as parallel lists ``{"name", "count", "total_us"}`` in name order."""
    sel = store.col("kind") != Kind.TRACE_SPAN
    ids = store.col("name_id")[sel]
    n = len(store.name_list)
    counts = np.bincount(ids, minlength=n)
    totals = np.bincount(ids, weights=store.col("dur_ns")[sel].astype(np.float64), minlength=n)
    present = np.flatnonzero(counts)
    names = [store.name_list[i] for i in present.tolist()]
    order = sorted(range(len(names)), key=names.__getitem__)
    present = present[order]
    return {
        "name": [names[i] for i in order],
        "count": counts[present].tolist(),
        "total_us": (totals[present] / 1000.0).tolist(),
    }


def merge_op_totals(parts: Iterable[dict[str, list[Any]]]) -> dict[str, list[Any]]:
    """Sum several ``op_totals`` (the ranks of one job)."""
    count: dict[str, int] = {}
    total: dict[str, float] = {}
    for part in parts:
        for name, c, t in zip(part["name"], part["count"], part["total_us"], strict=True):
            count[name] = count.get(name, 0) + c
            total[name] = total.get(name, 0.0) + t
    names = sorted(count)
    return {"name": names, "count": [count[k] for k in names], "total_us": [total[k] for k in names]}


def headline(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary figures of one run (one report per rank; times summed, step time the median
    over ranks of each rank's median step)."""
    step_medians = [
        statistics.median(s["duration_us"] for s in r["steps"]) for r in reports if r.get("steps")
    ]
    temporal = [t for r in reports for t in r.get("temporal", [])]
    span = sum(t["span_us"] for t in temporal)
    idle = sum(t["idle_us"] for t in temporal)
    p50 = [r["launch_latency"]["p50_us"] for r in reports if r["launch_latency"].get("p50_us") is not None]
    return {
        "source": ", ".join(str(r.get("source")) for r in reports),
        "ranks": len(reports),
        "steps": sum(len(r.get("steps", [])) for r in reports),
        "step_time_us": statistics.median(step_medians) if step_medians else None,
        "gpu_utilization_pct": 100.0 * (span - idle) / span if span else None,
        "gpu_busy_us": span - idle if temporal else None,
        "gpu_idle_us": idle if temporal else None,
        "kernel_time_us": sum(r["kernel_time_us"] for r in reports),
        "kernel_count": sum(r["kernel_count"] for r in reports),
        "communication_us": sum(r["kernel_kinds"]["communication_us"] for r in reports),
        "memory_us": sum(r["kernel_kinds"]["memory_us"] for r in reports),
        "launch_latency_p50_us": statistics.median(p50) if p50 else None,
        "events": sum(r["events"] for r in reports),
    }


def profile(reports: list[dict[str, Any]], ops: dict[str, list[Any]]) -> dict[str, Any]:
    """What ``compare`` needs of one run: its reports (one per rank) and its event totals."""
    return {"reports": reports, "ops": ops}


def profile_of_store(store: EventStore, report: dict[str, Any]) -> dict[str, Any]:
    return profile([report], op_totals(store))


def _change(diff_count: int) -> str:
    return "+" if diff_count > 0 else "-" if diff_count < 0 else "="


def _pct(base: float | None, test: float | None) -> float | None:
    if base is None or test is None or not base:
        return None
    return 100.0 * (test - base) / base


def _side_by_side(
    base: dict[str, tuple[int, float]], test: dict[str, tuple[int, float]]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name in set(base) | set(test):
        bc, bt = base.get(name, (0, 0.0))
        tc, tt = test.get(name, (0, 0.0))
        rows.append(
            {
                "name": name,
                "base_count": bc,
                "test_count": tc,
                "base_total_us": bt,
                "test_total_us": tt,
                "diff_count": tc - bc,
                "diff_total_us": tt - bt,
                "pct": _pct(bt, tt),
                "change": _change(tc - bc),
            }
        )
    rows.sort(key=lambda r: (-abs(float(r["diff_total_us"])), str(r["name"])))
    return rows


def _kernel_map(reports: list[dict[str, Any]]) -> dict[str, tuple[int, float]]:
    out: dict[str, tuple[int, float]] = {}
    for r in reports:
        for k in r["kernels"]:
            c, t = out.get(k["name"], (0, 0.0))
            out[k["name"]] = (c + k["count"], t + k["total_us"])
    return out


def _op_map(ops: dict[str, list[Any]]) -> dict[str, tuple[int, float]]:
    return {n: (c, t) for n, c, t in zip(ops["name"], ops["count"], ops["total_us"], strict=True)}


def compare(base: dict[str, Any], test: dict[str, Any]) -> dict[str, Any]:
    """Compare two profiles (``profile``); see the module docstring. The answer is
    ``{"compare": {...}}``, what ``profilerhub compare --format json`` prints."""
    hb, ht = headline(base["reports"]), headline(test["reports"])
    summary = []
    for metric in SUMMARY_METRICS:
        b, t = hb.get(metric), ht.get(metric)
        diff = t - b if b is not None and t is not None else None
        summary.append({"metric": metric, "base": b, "test": t, "diff": diff, "pct": _pct(b, t)})
    base_ops, test_ops = _op_map(base["ops"]), _op_map(test["ops"])
    return {
        "compare": {
            "base": hb,
            "test": ht,
            "summary": summary,
            "kernels": _side_by_side(_kernel_map(base["reports"]), _kernel_map(test["reports"])),
            "ops": _side_by_side(base_ops, test_ops),
            "added": sorted(set(test_ops) - set(base_ops)),
            "removed": sorted(set(base_ops) - set(test_ops)),
        }
    }


__all__ = [
    "SUMMARY_METRICS",
    "compare",
    "headline",
    "merge_op_totals",
    "op_totals",
    "profile",
    "profile_of_store",
]
