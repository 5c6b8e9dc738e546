"""GPU utilisation over time: the busy fraction of each GPU in equal time buckets."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.intervals import Coverage
from profilerhub_analysis.kernels import gpu_op_mask
from profilerhub_analysis.store import EventStore

DEFAULT_BUCKETS = 50


def utilization(store: EventStore, buckets: int = DEFAULT_BUCKETS) -> list[dict[str, Any]]:
    """Per device: the span of its GPU ops cut into ``buckets`` equal buckets; in each, the
    percentage of time at least one GPU op (kernel, memcpy, memset) was running."""
    sel = np.flatnonzero(gpu_op_mask(store.col("kind")))
    if not len(sel) or buckets < 1:
        return []
    start = store.col("ts_ns")[sel]
    end = start + store.col("dur_ns")[sel]
    device = store.col("device")[sel]
    out = []
    for dev in np.unique(device).tolist():  # once per GPU
        d = device == dev
        t0, t1 = int(start[d].min()), int(end[d].max())
        width = max((t1 - t0 + buckets - 1) // buckets, 1)
        edges = t0 + width * np.arange(buckets + 1, dtype=np.int64)
        busy = Coverage(start[d], end[d]).within(edges[:-1], edges[1:])
        out.append(
            {
                "device": int(dev),
                "start_us": t0 / 1000.0,
                "bucket_us": width / 1000.0,
                "busy_pct": np.round(100.0 * busy / width, 2).tolist(),
            }
        )
    return out


__all__ = ["DEFAULT_BUCKETS", "utilization"]
