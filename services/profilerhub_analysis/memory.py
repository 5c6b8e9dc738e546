"""Memory copies and sets on the GPU: count, time, bytes and bandwidth by direction."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.store import EventStore, Kind


def memory_kind(name: str) -> str:
    """HTA's memory kind of a memcpy/memset op name: ``Memset``, ``Memcpy HtoD`` (the first 11
    characters of a ``Memcpy`` name), or ``Memcpy Unknown``."""
    if name.startswith("Memset"):
        return "Memset"
    if name.startswith("Memcpy"):
        return name[:11]
    return "Memcpy Unknown"


def memory_ops(store: EventStore) -> list[dict[str, Any]]:
    kind = store.col("kind")
    sel = np.flatnonzero((kind == Kind.MEMCPY) | (kind == Kind.MEMSET))
    if not len(sel):
        return []
    names = store.name_list
    name_ids, inverse = np.unique(store.col("name_id")[sel], return_inverse=True)
    labels = sorted({memory_kind(names[i]) for i in name_ids.tolist()})
    label_of_name = np.array([labels.index(memory_kind(names[i])) for i in name_ids.tolist()])
    label = label_of_name[inverse.reshape(-1)]
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


__all__ = ["memory_kind", "memory_ops"]
