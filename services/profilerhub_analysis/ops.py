"""CPU operators (``cpu_op`` events: ``aten::...``) by name, most inclusive time first."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.store import EventStore, Kind

TOP_OPS = 50


def cpu_ops(store: EventStore, top: int = TOP_OPS) -> list[dict[str, Any]]:
    """CPU operators (``cpu_op``: ``aten::...``) by name, most inclusive time first."""
    kind = store.col("kind")
    rows = np.flatnonzero(kind == Kind.CPU_OP)
    if not len(rows):
        return []
    ids = store.col("name_id")[rows]
    dur = store.col("dur_ns")[rows].astype(np.float64)
    n = len(store.name_list)
    counts = np.bincount(ids, minlength=n)
    totals = np.bincount(ids, weights=dur, minlength=n)
    present = np.flatnonzero(counts)
    order = present[np.argsort(-totals[present], kind="stable")][:top]
    names = store.name_list
    return [
        {
            "name": names[i],
            "count": int(counts[i]),
            "total_us": round(float(totals[i]) / 1e3, 3),
            "mean_us": round(float(totals[i] / counts[i]) / 1e3, 3),
        }
        for i in order.tolist()
    ]


__all__ = ["TOP_OPS", "cpu_ops"]
