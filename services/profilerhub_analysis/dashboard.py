"""The profiler app's dashboard: every panel's figures, from the engine.

Two halves, so the expensive part runs once at ingest and the app only assembles:

- ``trace_panels(store, report)`` (at ingest, per trace): what the report does not hold already,
  computed from the event store (GPU/CPU active time, CPU utilisation over time, GPU activity,
  step-time and annotation histograms, CPU ops, event totals for compare). JSON-ready.
- ``dashboard(report, panels, job_summary, top)`` (in the app, per request): the panels of
  ``docs/app-api.md`` from the stored report, those panels and the job's summary (training and
  system metrics, the SDK's annotations), with the kernel panels cut at the top ``top`` + other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis import scratch
from profilerhub_analysis.compare import op_totals
from profilerhub_analysis.intervals import Coverage, union, union_length
from profilerhub_analysis.kernels import gpu_op_mask
from profilerhub_analysis.lanes import LANE_CPU, LANE_KIND_NAMES
from profilerhub_analysis.ops import cpu_ops
from profilerhub_analysis.store import EventStore, Kind

PANELS_FORMAT = "profilerhub-panels/1"
UTIL_BUCKETS = 50
HIST_BINS = 20
#: Annotation names given a histogram (most total time first).
MAX_ANNOTATIONS = 200
#: ``top`` bounds accepted by ``dashboard``.
MAX_TOP = 1000
DEFAULT_TOP = 10
FIXED_TOP = 15

_ACTIVITY = (
    ("kernel", Kind.KERNEL),
    ("memcpy", Kind.MEMCPY),
    ("memset", Kind.MEMSET),
    ("sync", Kind.CUDA_SYNC),
)


def _pct(part: float, whole: float) -> float | None:
    return 100.0 * part / whole if whole else None


def histogram(values_us: np.ndarray, bins: int = HIST_BINS) -> dict[str, Any]:
    """Equal-width bins from the smallest to the largest value: ``{"edges_us", "counts"}``
    (``len(edges) == bins + 1``; the last bin includes its upper edge)."""
    if not len(values_us):
        return {"edges_us": [], "counts": []}
    lo, hi = float(values_us.min()), float(values_us.max())
    if hi <= lo:
        hi = lo + 1.0
    counts, edges = np.histogram(values_us, bins=bins, range=(lo, hi))
    return {"edges_us": edges.tolist(), "counts": counts.tolist()}


def _gpu_active(store: EventStore) -> dict[str, Any]:
    sel = np.flatnonzero(gpu_op_mask(store.col("kind")))
    if not len(sel):
        return {"active_us": 0.0, "span_us": 0.0, "pct": None, "devices": []}
    start = store.col("ts_ns")[sel]
    end = start + store.col("dur_ns")[sel]
    device = store.col("device")[sel]
    rows = []
    for dev in np.unique(device).tolist():  # once per GPU
        d = device == dev
        active, span = union_length(start[d], end[d]), int(end[d].max() - start[d].min())
        rows.append(
            {"device": int(dev), "active_us": active / 1e3, "span_us": span / 1e3, "pct": _pct(active, span)}
        )
    active, span = union_length(start, end), int(end.max() - start.min())
    return {"active_us": active / 1e3, "span_us": span / 1e3, "pct": _pct(active, span), "devices": rows}


def _cpu_lanes(store: EventStore) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per CPU thread lane with events: the union of its events' intervals (sorted, disjoint).

    Built a lane at a time and ``scratch.CHUNK`` events at a time (the union of each chunk's
    unions is the lane's), from slices of the store's columns where its rows are in lane order
    (the reader's order), so no full-length copy of a column is made; nested CPU ops collapse to
    their top-level ones, a small fraction of the events."""
    lane_kind = store.lane_column("kind")
    cpu = [ln for ln, k in enumerate(lane_kind) if k == LANE_KIND_NAMES[LANE_CPU]]
    if not cpu:
        return {}
    ts, dur, lane_id = store.col("ts_ns"), store.col("dur_ns"), store.col("lane_id")
    bounds = _lane_bounds(lane_id, len(lane_kind))
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for ln in cpu:
        if bounds is not None:
            rows: Any = slice(int(bounds[ln]), int(bounds[ln + 1]))
            n = bounds[ln + 1] - bounds[ln]
        else:  # not in lane order: this lane's rows picked out
            rows = np.flatnonzero(lane_id == ln)
            n = len(rows)
        if not n:
            continue
        lane_ts, lane_dur = ts[rows], dur[rows]
        parts = [
            union(
                lane_ts[a : a + scratch.CHUNK],
                lane_ts[a : a + scratch.CHUNK] + lane_dur[a : a + scratch.CHUNK],
            )
            for a in range(0, int(n), scratch.CHUNK)
        ]
        out[ln] = union(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    return out


def _lane_bounds(lane_id: np.ndarray, lanes: int) -> np.ndarray | None:
    """Where each lane's rows start (``lanes + 1`` offsets) when rows are in lane order; else None."""
    last = None
    for a in range(0, len(lane_id), scratch.CHUNK):
        part = lane_id[a : a + scratch.CHUNK]
        if np.any(part[1:] < part[:-1]) or (last is not None and part[0] < last):
            return None
        last = part[-1]
    return np.searchsorted(lane_id, np.arange(lanes + 1), side="left")


def _cpu_active(store: EventStore) -> dict[str, Any]:
    lanes = _cpu_lanes(store)
    if not lanes:
        return {"active_us": 0.0, "span_us": 0.0, "pct": None, "threads": []}
    span = int(max(e[-1] for _, e in lanes.values()) - min(s[0] for s, _ in lanes.values()))
    threads: list[dict[str, Any]] = []
    for ln, (starts, ends) in lanes.items():  # once per thread
        active = int((ends - starts).sum())
        threads.append(
            {
                "lane_id": int(ln),
                "pid": int(store.lane_column("pid")[ln]),
                "tid": int(store.lane_column("tid")[ln]),
                "name": str(store.lane_column("name")[ln]),
                "active_us": active / 1e3,
                "pct": _pct(active, span),
            }
        )
    threads.sort(key=lambda t: -t["active_us"])
    active = union_length(
        np.concatenate([s for s, _ in lanes.values()]), np.concatenate([e for _, e in lanes.values()])
    )
    return {"active_us": active / 1e3, "span_us": span / 1e3, "pct": _pct(active, span), "threads": threads}


def _cpu_utilization(store: EventStore, buckets: int = UTIL_BUCKETS) -> list[dict[str, Any]]:
    """Per process: in equal buckets over its span, the mean over its threads of the fraction of
    the bucket each thread spent inside any event."""
    lanes = _cpu_lanes(store)
    pid_of = store.lane_column("pid")
    out = []
    for p in sorted({int(pid_of[ln]) for ln in lanes}):  # once per process
        mine = [ln for ln in lanes if int(pid_of[ln]) == p]
        t0 = min(int(lanes[ln][0][0]) for ln in mine)
        t1 = max(int(lanes[ln][1].max()) for ln in mine)
        width = max((t1 - t0 + buckets - 1) // buckets, 1)
        edges = t0 + width * np.arange(buckets + 1, dtype=np.int64)
        busy = np.zeros(buckets, dtype=np.float64)
        for ln in mine:  # once per thread
            busy += Coverage(*lanes[ln]).within(edges[:-1], edges[1:])
        out.append(
            {
                "pid": int(p),
                "start_us": t0 / 1e3,
                "bucket_us": width / 1e3,
                "threads": len(mine),
                "busy_pct": np.round(100.0 * busy / (width * len(mine)), 2).tolist(),
            }
        )
    return out


def _gpu_activity(store: EventStore) -> list[dict[str, Any]]:
    kind, dur = store.col("kind"), store.col("dur_ns")
    rows: list[dict[str, Any]] = []
    for label, k in _ACTIVITY:
        d = kind == k
        rows.append({"activity": label, "count": int(d.sum()), "total_us": int(dur[d].sum()) / 1e3})
    total = sum(r["total_us"] for r in rows)
    for r in rows:
        r["pct"] = _pct(r["total_us"], total)
    return rows


def _annotations(store: EventStore) -> dict[str, Any]:
    """The trace's user annotations (``ProfilerStep#N`` included) by name, with a histogram each."""
    sel = np.flatnonzero(store.col("kind") == Kind.USER_ANNOTATION)
    if not len(sel):
        return {"names": [], "histograms": {}}
    ids = store.col("name_id")[sel]
    dur = store.col("dur_ns")[sel].astype(np.float64) / 1e3
    order = np.argsort(ids, kind="stable")
    ids, dur = ids[order], dur[order]
    first = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
    stop = np.append(first[1:], len(ids))
    totals = np.add.reduceat(dur, first)
    best = np.argsort(-totals, kind="stable")[:MAX_ANNOTATIONS]
    names, hists = [], {}
    for g in best.tolist():  # once per annotation name
        a, b = int(first[g]), int(stop[g])
        name = store.name_list[int(ids[a])]
        v = dur[a:b]
        names.append(
            {
                "name": name,
                "source": "trace",
                "count": b - a,
                "total_us": float(totals[g]),
                "mean_us": float(v.mean()),
                "max_us": float(v.max()),
            }
        )
        hists[name] = histogram(v)
    return {"names": names, "histograms": hists}


def _step_time(report: dict[str, Any]) -> dict[str, Any]:
    durations = np.array([s["duration_us"] for s in report.get("steps", [])], dtype=np.float64)
    out: dict[str, Any] = {
        "count": int(len(durations)),
        "steps": [{"step": s["step"], "duration_us": s["duration_us"]} for s in report.get("steps", [])],
        "histogram": histogram(durations),
    }
    if len(durations):
        p50, p90 = np.percentile(durations, [50, 90]).tolist()
        out.update(
            mean_us=float(durations.mean()),
            p50_us=p50,
            p90_us=p90,
            min_us=float(durations.min()),
            max_us=float(durations.max()),
        )
    else:
        out.update(mean_us=None, p50_us=None, p90_us=None, min_us=None, max_us=None)
    return out


def trace_panels(store: EventStore, report: dict[str, Any]) -> dict[str, Any]:
    """What ingest stores beside the report for one trace (see the module docstring)."""
    return {
        "format": PANELS_FORMAT,
        "gpu_active": _gpu_active(store),
        "cpu_active": _cpu_active(store),
        "cpu_utilization": _cpu_utilization(store),
        "gpu_activity": _gpu_activity(store),
        "step_time": _step_time(report),
        "annotations": _annotations(store),
        "cpu_ops": cpu_ops(store),
        "op_totals": op_totals(store),
    }


def top_kernels(kernels: list[dict[str, Any]], k: int, by: str = "total_us") -> dict[str, Any]:
    """The ``k`` kernels with the most ``by`` (``total_us`` or ``count``) and the rest as "other"."""
    ranked = sorted(kernels, key=lambda r: (-r[by], r["name"]))
    total_us = sum(r["total_us"] for r in kernels)
    total_count = sum(r["count"] for r in kernels)
    top, rest = ranked[:k], ranked[k:]
    if by == "count":
        return {
            "k": k,
            "total": total_count,
            "top": [
                {"name": r["name"], "count": r["count"], "pct": _pct(r["count"], total_count)} for r in top
            ],
            "other": {
                "kernels": len(rest),
                "count": sum(r["count"] for r in rest),
                "pct": _pct(sum(r["count"] for r in rest), total_count),
            },
        }
    rest_us = sum(r["total_us"] for r in rest)
    return {
        "k": k,
        "total_us": total_us,
        "count": total_count,
        "top": [r | {"pct": _pct(r["total_us"], total_us)} for r in top],
        "other": {
            "kernels": len(rest),
            "count": sum(r["count"] for r in rest),
            "total_us": rest_us,
            "pct": _pct(rest_us, total_us),
        },
    }


def _with_sdk_annotations(panel: dict[str, Any], sdk: list[dict[str, Any]]) -> dict[str, Any]:
    names = list(panel.get("names", []))
    histograms = dict(panel.get("histograms", {}))
    for a in sdk:
        if a.get("histogram") and a["name"] not in histograms:
            histograms[a["name"]] = a["histogram"]
        names.append(
            {
                "name": a["name"],
                "source": "sdk",
                "count": a["count"],
                "total_us": a["total_ms"] * 1e3,
                "mean_us": a["mean_ms"] * 1e3,
                "max_us": a["max_ms"] * 1e3,
            }
        )
    return {"names": names, "histograms": histograms}


def _sdk_step_time(steps: dict[str, Any]) -> dict[str, Any]:
    """The step-time panel from the SDK's steps (a job whose traces have no ``ProfilerStep``)."""
    items = steps.get("items", [])
    report = {"steps": [{"step": i.get("step"), "duration_us": i["dur_ms"] * 1e3} for i in items]}
    return _step_time(report) | {"source": "sdk"}


def dashboard(
    report: dict[str, Any], panels: dict[str, Any], job: dict[str, Any] | None = None, top: int = DEFAULT_TOP
) -> dict[str, Any]:
    """Every panel of one trace (``docs/app-api.md``). ``job`` is the job's summary (its
    ``metrics``, ``system`` and SDK ``annotations`` join the panels)."""
    if not 1 <= top <= MAX_TOP:
        raise ValueError(f"top must be between 1 and {MAX_TOP}")
    job = job or {}
    kernels = report.get("kernels", [])
    step_time = panels.get("step_time") or _step_time({})
    if not step_time.get("count") and job.get("steps", {}).get("items"):
        step_time = _sdk_step_time(job["steps"])
    return {
        "gpu_active": panels.get("gpu_active"),
        "cpu_active": panels.get("cpu_active"),
        "gpu_utilization": report.get("utilization", []),
        "cpu_utilization": panels.get("cpu_utilization", []),
        "kernel_time": top_kernels(kernels, top),
        "kernel_time_top15": top_kernels(kernels, FIXED_TOP),
        "launch_counts": top_kernels(kernels, top, by="count"),
        "launch_counts_top15": top_kernels(kernels, FIXED_TOP, by="count"),
        "step_time": step_time,
        "precision": report.get("precision", []),
        "gpu_activity": panels.get("gpu_activity", []),
        "memory_ops": report.get("memory_ops", []),
        "memory_bw": report.get("memory_bw", []),
        "annotations": _with_sdk_annotations(panels.get("annotations", {}), job.get("annotations", [])),
        "launch_latency": report.get("launch_latency"),
        "launch_stats": report.get("launch_stats", []),
        "idle_breakdown": report.get("idle_breakdown", []),
        "temporal": report.get("temporal", []),
        "steps": report.get("steps", []),
        "queue_length": report.get("queue_length", []),
        "comm_comp_overlap": report.get("comm_comp_overlap", []),
        "gpu_metrics": report.get("gpu_metrics", []),
        "cpu_ops": panels.get("cpu_ops", []),
        "sync_ops": report.get("sync_ops", []),
        "metrics": job.get("metrics", {}),
        "system": job.get("system", {"samples": 0, "metrics": {}}),
    }


__all__ = [
    "DEFAULT_TOP",
    "MAX_TOP",
    "PANELS_FORMAT",
    "dashboard",
    "histogram",
    "top_kernels",
    "trace_panels",
]
