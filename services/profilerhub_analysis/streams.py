"""Per GPU stream: idle time split by cause, and the queue of launched-but-not-started ops.

Both group the GPU ops (kernels, memcpy, memset) by ``(device, stream)`` and work on whole columns:
one sort, then per stream a few slices (a loop runs once per stream, never per event).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.kernels import gpu_op_mask
from profilerhub_analysis.store import EventStore

#: Gaps shorter than this between ops already queued on a stream count as kernel wait (HTA's
#: ``consecutive_kernel_delay``: 30 in its µs time unit).
KERNEL_WAIT_THRESHOLD_NS = 30_000


def _groups(keys: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(first, stop) index of each run of equal keys in arrays already sorted by those keys."""
    n = len(keys[0])
    if not n:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for k in keys:
        new[1:] |= k[1:] != k[:-1]
    first = np.flatnonzero(new)
    return first, np.append(first[1:], n)


def idle_breakdown(store: EventStore, threshold_ns: int = KERNEL_WAIT_THRESHOLD_NS) -> list[dict[str, Any]]:
    """Per (device, stream) with GPU ops: its idle time, split like HTA's idle-time breakdown.

    Ops sorted by (ts, dur); for op i >= 1 the gap after the latest end so far (``prev_end``, a
    running maximum, so overlapping ops give no negative gaps) counts as

    - host wait: op i has a launch call and that call started after ``prev_end`` (nothing was
      queued: the GPU waited on the CPU);
    - kernel wait: otherwise, when the gap is shorter than ``threshold_ns``;
    - other: the rest (waits on other streams or events, ops with no launch event).

    ``idle_us`` is their sum: the stream's span minus the union of its ops.
    """
    sel = np.flatnonzero(gpu_op_mask(store.col("kind")))
    if not len(sel):
        return []
    ts = store.col("ts_ns")
    device, stream = store.col("device")[sel], store.col("stream")[sel]
    start, dur = ts[sel], store.col("dur_ns")[sel]
    order = np.lexsort((dur, start, stream, device))
    device, stream, start, dur = device[order], stream[order], start[order], dur[order]
    end = start + dur
    launch = store.col("launch")[sel][order]
    launch_ts = np.where(launch >= 0, ts[np.maximum(launch, 0)], np.iinfo(np.int64).min)
    rows = []
    for a, b in zip(*(x.tolist() for x in _groups((device, stream))), strict=True):  # once per stream
        prev_end = np.maximum.accumulate(end[a:b])[:-1]
        gap = np.maximum(start[a + 1 : b] - prev_end, 0)
        host = launch_ts[a + 1 : b] > prev_end
        kernel = ~host & (gap < threshold_ns)
        other = ~host & ~kernel
        rows.append(
            {
                "device": int(device[a]),
                "stream": int(stream[a]),
                "ops": b - a,
                "idle_us": int(gap.sum()) / 1000.0,
                "host_wait_us": int(gap[host].sum()) / 1000.0,
                "kernel_wait_us": int(gap[kernel].sum()) / 1000.0,
                "other_us": int(gap[other].sum()) / 1000.0,
            }
        )
    return rows


def queue_length(store: EventStore) -> list[dict[str, Any]]:
    """Per (device, stream) with launch pairs: statistics of the queue length (HTA's
    ``get_queue_length_summary``): +1 when a launch call starts, -1 when its GPU op starts, so
    the number of ops launched but not started yet.

    Events of a stream sorted by time, at equal times the -1s first; the series is the running
    sum after each event (``count`` = 2 x pairs). Not time-weighted; percentiles interpolate
    linearly (numpy's default); ``std`` has ddof=1. Clock skew can make values negative.
    """
    launch = store.col("launch")
    gpu = np.flatnonzero(gpu_op_mask(store.col("kind")) & (launch >= 0))
    if not len(gpu):
        return []
    ts = store.col("ts_ns")
    device = np.tile(store.col("device")[gpu], 2)
    stream = np.tile(store.col("stream")[gpu], 2)
    when = np.concatenate([ts[launch[gpu]], ts[gpu]])
    step = np.concatenate([np.ones(len(gpu), np.int64), -np.ones(len(gpu), np.int64)])
    order = np.lexsort((step, when, stream, device))
    device, stream, step = device[order], stream[order], step[order]
    running = np.cumsum(step)
    rows = []
    for a, b in zip(*(x.tolist() for x in _groups((device, stream))), strict=True):  # once per stream
        values = (running[a:b] - (running[a - 1] if a else 0)).astype(np.float64)
        p25, p50, p75 = np.percentile(values, [25, 50, 75]).tolist()
        rows.append(
            {
                "device": int(device[a]),
                "stream": int(stream[a]),
                "count": b - a,
                "mean": float(values.mean()),
                "std": float(values.std(ddof=1)) if b - a > 1 else None,
                "min": float(values.min()),
                "p25": p25,
                "p50": p50,
                "p75": p75,
                "max": float(values.max()),
            }
        )
    return rows


__all__ = ["KERNEL_WAIT_THRESHOLD_NS", "idle_breakdown", "queue_length"]
