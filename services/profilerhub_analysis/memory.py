"""Memory copies and sets on the GPU: count, time, bytes and bandwidth by direction."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.intervals import union_length
from profilerhub_analysis.store import EventStore, Kind


def memory_kind(name: str) -> str:
    """HTA's memory kind of a memcpy/memset op name: ``Memset``, ``Memcpy HtoD`` (the first 11
    characters of a ``Memcpy`` name), or ``Memcpy Unknown``."""
    if name.startswith("Memset"):
        return "Memset"
    if name.startswith("Memcpy"):
        return name[:11]
    return "Memcpy Unknown"


def _memory_rows(store: EventStore) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(rows of memcpy/memset ops, index of each one's kind in ``labels``, sorted ``labels``)."""
    kind = store.col("kind")
    sel = np.flatnonzero((kind == Kind.MEMCPY) | (kind == Kind.MEMSET))
    names = store.name_list
    name_ids, inverse = np.unique(store.col("name_id")[sel], return_inverse=True)
    labels = sorted({memory_kind(names[i]) for i in name_ids.tolist()})
    label_of_name = np.array([labels.index(memory_kind(names[i])) for i in name_ids.tolist()], dtype=np.int64)
    return sel, label_of_name[inverse.reshape(-1)] if len(sel) else np.zeros(0, np.int64), labels


def memory_ops(store: EventStore) -> list[dict[str, Any]]:
    sel, label, labels = _memory_rows(store)
    if not len(sel):
        return []
    dur = store.col("dur_ns")[sel]
    nbytes = store.col("bytes")[sel]
    rows = []
    for i, lab in enumerate(labels):
        d = label == i
        has = d & (nbytes >= 0)
        total_ns = int(dur[d].sum())
        total_bytes = int(nbytes[has].sum()) if has.any() else None
        timed_ns = int(dur[has].sum())
        rows.append(
            {
                "kind": lab,
                "count": int(d.sum()),
                "total_us": total_ns / 1000.0,
                "bytes": total_bytes,
                "events_without_bytes": int((d & (nbytes < 0)).sum()),
                # bytes per ns = GB/s; over the ops that report bytes
                "bandwidth_gbps": total_bytes / timed_ns if total_bytes and timed_ns else None,
            }
        )
    return rows


#: A 0-µs op counts as active for this long in the bandwidth series (HTA's rule).
MIN_ACTIVE_NS = 1000


def peak_bandwidth(start: np.ndarray, end: np.ndarray, gbps: np.ndarray) -> float:
    """Maximum over time of the summed bandwidth of the ops active then (half-open intervals: at
    equal times ends come before starts)."""
    when = np.concatenate([end, start])
    delta = np.concatenate([-gbps, gbps]).astype(np.float64)
    order = np.lexsort((np.concatenate([np.zeros(len(end)), np.ones(len(start))]), when))
    return float(np.cumsum(delta[order]).max())


def memory_bw(store: EventStore) -> list[dict[str, Any]]:
    """Per (device, kind) of memcpy/memset ops: count, bytes, busy time (union) and the peak of
    Kineto's own ``memory bandwidth (GB/s)`` figure summed over concurrently active ops (HTA's
    ``get_memory_bw_time_series``). ``peak_gbps`` is None when no op of the kind carries the
    figure; ``mean_gbps`` is bytes over busy time (None without bytes)."""
    sel, label, labels = _memory_rows(store)
    if not len(sel):
        return []
    start = store.col("ts_ns")[sel]
    dur = store.col("dur_ns")[sel]
    end = start + dur
    active_end = start + np.maximum(dur, MIN_ACTIVE_NS)
    nbytes = store.col("bytes")[sel]
    gbps = store.col("bandwidth")[sel].astype(np.float64)
    has_bw = gbps >= 0
    device = store.col("device")[sel]
    rows = []
    for dev in np.unique(device).tolist():  # once per GPU and kind
        for i, lab in enumerate(labels):
            d = (device == dev) & (label == i)
            if not d.any():
                continue
            has = d & (nbytes >= 0)
            total_bytes = int(nbytes[has].sum()) if has.any() else None
            busy_ns = union_length(start[d], end[d])
            b = d & has_bw
            rows.append(
                {
                    "device": int(dev),
                    "kind": lab,
                    "count": int(d.sum()),
                    "bytes": total_bytes,
                    "busy_us": busy_ns / 1000.0,
                    "peak_gbps": peak_bandwidth(start[b], active_end[b], gbps[b]) if b.any() else None,
                    "mean_gbps": total_bytes / busy_ns if total_bytes and busy_ns else None,
                    "ops_without_bytes": int((d & (nbytes < 0)).sum()),
                    "ops_without_bandwidth": int((d & ~has_bw).sum()),
                }
            )
    return rows


__all__ = ["MIN_ACTIVE_NS", "memory_bw", "memory_kind", "memory_ops", "peak_bandwidth"]
