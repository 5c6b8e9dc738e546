"""The all-ranks overview: every rank's activity over the job's wall-clock time, one row each.

Two steps, so a job of any rank count is joined from small pieces:

1. ``activity(store)``, once per trace at ingest (with its summary entry): the span of the trace
   (all its complete events) cut into ``ACTIVITY_BUCKETS`` equal buckets and, in each, the
   percentage of time the rank was busy: at least one GPU op (kernel, memcpy, memset) running on
   any of its GPUs, or, for a trace with no GPU op, at least one CPU operator running on any
   thread. The busy time is the length of the union of those intervals inside the bucket
   (``intervals.Coverage``), so overlapping kernels on several streams count once.
2. ``overview(entries)``, once per job at the join: the ranks' buckets resampled onto one common
   grid of ``OVERVIEW_COLUMNS`` columns spanning the earliest start to the latest end over all
   ranks (of their busy spans and their profiled steps), in wall-clock time (trace time plus the
   trace's ``baseTimeNanoseconds``). A rank's busy time is a piecewise-linear function of time
   (the integral of its buckets); a column's figure is that function's growth across the column
   over the part of the column the rank's trace covers, so resampling keeps busy time exact at
   bucket edges. A column the rank's trace does not reach is ``None`` (no data, drawn apart from
   0 %). Each rank's profiled steps come along as ``[start, end, step]`` offsets (µs) from the
   grid's start, so a late or slow rank shows.

A page can then draw ranks × columns at once (one small document, whatever the traces' size) and
link a cell to that rank's timeline at that time: a grid time is wall-clock µs, as the timeline's
``t0us``/``t1us`` are; ``base_us`` is what the rank's trace adds to its own time to get there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.intervals import Coverage
from profilerhub_analysis.kernels import gpu_op_mask
from profilerhub_analysis.store import EventStore, Kind

#: Buckets per trace at ingest: finer than any overview column, so resampling loses little.
ACTIVITY_BUCKETS = 1000
#: Columns of the job's overview (what a page about 1,000 px wide draws, one or more px each).
OVERVIEW_COLUMNS = 400
#: Steps kept per rank in the overview (the first ones; a profile rarely records more).
MAX_STEPS = 500


def activity(store: EventStore, buckets: int = ACTIVITY_BUCKETS) -> dict[str, Any] | None:
    """One trace's busy percentage per bucket of its span (module docstring), or None when it has
    no GPU op and no CPU operator. ``start_us``/``bucket_us`` are trace time (µs); ``base_us`` is
    what turns trace time into wall-clock time (the trace's base, 0 when it has none)."""
    kind = store.col("kind")
    basis = "gpu"
    sel = np.flatnonzero(gpu_op_mask(kind))
    if not len(sel):
        basis, sel = "cpu", np.flatnonzero(kind == Kind.CPU_OP)
    if not len(sel) or buckets < 1:
        return None
    ts, dur = store.col("ts_ns"), store.col("dur_ns")
    start, end = ts[sel], ts[sel] + dur[sel]
    t0, t1 = int(ts.min()), int((ts + dur).max())  # the whole trace: an idle GPU shows as 0 %
    width = max((t1 - t0 + buckets - 1) // buckets, 1)
    edges = t0 + width * np.arange(buckets + 1, dtype=np.int64)
    busy = Coverage(start, end).within(edges[:-1], edges[1:])
    base_ns = store.meta.base_time_ns or 0
    return {
        "basis": basis,
        "start_us": t0 / 1000.0,
        "bucket_us": width / 1000.0,
        "base_us": base_ns / 1000.0,
        "busy_pct": np.round(100.0 * busy / width, 1).tolist(),
    }


def _busy_at(act: dict[str, Any], times_us: np.ndarray) -> np.ndarray:
    """The rank's busy time (µs) from its first bucket up to each wall-clock time."""
    pct = np.asarray(act["busy_pct"], dtype=np.float64)
    width = float(act["bucket_us"])
    start = float(act["start_us"]) + float(act["base_us"])
    edges = start + width * np.arange(len(pct) + 1)
    cum = np.concatenate([[0.0], np.cumsum(pct * width / 100.0)])
    return np.interp(times_us, edges, cum)


def _span(act: dict[str, Any]) -> tuple[float, float]:
    start = float(act["start_us"]) + float(act["base_us"])
    return start, start + float(act["bucket_us"]) * len(act["busy_pct"])


def overview(entries: list[dict[str, Any]], columns: int = OVERVIEW_COLUMNS) -> dict[str, Any] | None:
    """The job's all-ranks overview from its traces' summary entries (each with ``activity`` and
    ``report``, in the job's trace order), or None when no trace has any activity.

    ``{"start_us", "column_us", "columns", "basis", "ranks": [{"index", "rank", "file", "base_us",
    "busy_pct": [one per column, None outside the trace], "steps": [[start, end, step], ...]}]}``,
    ranks sorted by rank; ``start_us`` is wall-clock µs, step offsets are µs from it."""
    acts = [(i, e) for i, e in enumerate(entries) if e.get("activity")]
    if not acts or columns < 1:
        return None
    spans = [_span(e["activity"]) for _, e in acts]
    ends = [t for _, t in spans]
    starts = [s for s, _ in spans]
    for _, e in acts:  # the grid spans the profiled steps too (they start on the CPU, before the GPU)
        base, steps = float(e["activity"]["base_us"]), e.get("report", {}).get("steps") or []
        starts += [float(st["start_us"]) + base for st in steps[:MAX_STEPS]]
        ends += [float(st["start_us"]) + float(st["duration_us"]) + base for st in steps[:MAX_STEPS]]
    lo, hi = min(starts), max(ends)
    width = max((hi - lo) / columns, 1e-3)
    edges = lo + width * np.arange(columns + 1)
    rows = []
    for (index, entry), (s, t) in zip(acts, spans, strict=True):
        act = entry["activity"]
        covered = np.clip(np.minimum(edges[1:], t) - np.maximum(edges[:-1], s), 0.0, None)
        cum = _busy_at(act, edges)
        with np.errstate(divide="ignore", invalid="ignore"):
            pct = np.where(covered > 0, 100.0 * np.diff(cum) / covered, np.nan)
        report = entry.get("report", {})
        rank = report.get("rank")
        base = float(act["base_us"])
        steps = [
            [round(float(st["start_us"]) + base - lo, 3),
             round(float(st["start_us"]) + float(st["duration_us"]) + base - lo, 3),
             st.get("step")]
            for st in (report.get("steps") or [])[:MAX_STEPS]
        ]  # fmt: skip
        rows.append(
            {
                "index": index,
                "rank": rank if isinstance(rank, int) else index,
                "file": entry.get("file"),
                "base_us": base,
                "busy_pct": [
                    None if np.isnan(v) else round(min(max(v, 0.0), 100.0), 1) for v in pct.tolist()
                ],
                "steps": steps,
            }
        )
    rows.sort(key=lambda r: (r["rank"], r["index"]))
    bases = {e["activity"]["basis"] for _, e in acts}
    return {
        "start_us": lo,
        "column_us": width,
        "columns": columns,
        "basis": bases.pop() if len(bases) == 1 else "mixed",
        "ranks": rows,
    }


__all__ = ["ACTIVITY_BUCKETS", "MAX_STEPS", "OVERVIEW_COLUMNS", "activity", "overview"]
