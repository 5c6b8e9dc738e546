"""HTA's temporal breakdown per GPU (idle / compute / non-compute) and idle-time breakdown."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.intervals import union_length
from profilerhub_analysis.kernels import CLASS_COMPUTE, gpu_op_mask, name_classes
from profilerhub_analysis.store import EventStore

#: Gaps shorter than this between ops already queued on a stream count as kernel wait (HTA's
#: ``consecutive_kernel_delay``: 30 in its µs time unit).
KERNEL_WAIT_THRESHOLD_NS = 30_000


def temporal_breakdown(store: EventStore) -> list[dict[str, Any]]:
    """Per device, over GPU ops only: span = last end - first start; idle = span - |union of all
    ops|; compute = |union of compute-class ops|; non_compute = span - idle - compute."""
    kind = store.col("kind")
    sel = np.flatnonzero(gpu_op_mask(kind))
    if not len(sel):
        return []
    start = store.col("ts_ns")[sel]
    end = start + store.col("dur_ns")[sel]
    device = store.col("device")[sel]
    compute = name_classes(store.name_list)[store.col("name_id")[sel]] == CLASS_COMPUTE
    rows = []
    for dev in np.unique(device).tolist():  # once per GPU
        d = device == dev
        span = int(end[d].max() - start[d].min())
        busy = union_length(start[d], end[d])
        comp = union_length(start[d & compute], end[d & compute])
        idle = span - busy
        rows.append(
            {
                "device": int(dev),
                "idle_us": idle / 1000.0,
                "compute_us": comp / 1000.0,
                "non_compute_us": (span - idle - comp) / 1000.0,
                "span_us": span / 1000.0,
                "idle_pct": 100.0 * idle / span if span else 0.0,
                "compute_pct": 100.0 * comp / span if span else 0.0,
            }
        )
    return rows


def idle_breakdown(store: EventStore, threshold_ns: int = KERNEL_WAIT_THRESHOLD_NS) -> list[dict[str, Any]]:
    """Idle gaps between consecutive GPU ops of each stream, split like HTA:

    - host wait: the next op's launch call started after the previous op ended (nothing queued);
    - kernel wait: otherwise, when the gap is shorter than ``threshold_ns``;
    - other: the rest (waits on other streams, events, unknown launches).

    Unlike HTA, overlapping ops on a stream give no negative gaps (the previous end is the
    latest end so far).
    """
    kind = store.col("kind")
    sel = np.flatnonzero(gpu_op_mask(kind))  # rows are sorted by (lane, ts)
    if len(sel) < 2:
        return []
    ts = store.col("ts_ns")
    lane = store.col("lane_id")[sel]
    start = ts[sel]
    end = start + store.col("dur_ns")[sel]
    launch = store.col("launch")[sel]
    launch_ts = np.where(launch >= 0, ts[np.maximum(launch, 0)], np.iinfo(np.int64).min)
    rows = []
    for ln in np.unique(lane).tolist():  # once per stream
        d = lane == ln
        s, e, lt = start[d], end[d], launch_ts[d]
        if len(s) < 2:
            continue
        prev_end = np.maximum.accumulate(e)[:-1]
        gap = np.maximum(s[1:] - prev_end, 0)
        host = lt[1:] > prev_end
        kernel = ~host & (gap < threshold_ns)
        other = ~host & ~kernel
        rows.append(
            {
                "device": int(store.lane_column("device")[ln]),
                "stream": int(store.lane_column("tid")[ln]),
                "idle_us": int(gap.sum()) / 1000.0,
                "host_wait_us": int(gap[host].sum()) / 1000.0,
                "kernel_wait_us": int(gap[kernel].sum()) / 1000.0,
                "other_us": int(gap[other].sum()) / 1000.0,
            }
        )
    return rows


__all__ = ["KERNEL_WAIT_THRESHOLD_NS", "idle_breakdown", "temporal_breakdown"]
