"""Kernel breakdown per name, and GPU time by kind (compute, communication, memory)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from profilerhub_analysis.store import GPU_OP_KINDS, EventStore, Kind

COMMUNICATION = re.compile(r"^nccl.*Kernel")
MEMORY = re.compile(r"^Memcpy|^Memset|^dma")

CLASS_COMPUTE, CLASS_COMMUNICATION, CLASS_MEMORY = 0, 1, 2


def name_classes(names: list[str]) -> np.ndarray:
    """HTA's kernel class of each name: communication (``^nccl.*Kernel``, RCCL included), memory
    (``^Memcpy|^Memset|^dma``), otherwise compute. Indexed by ``name_id``."""
    out = np.zeros(max(len(names), 1), dtype=np.int8)
    for i, name in enumerate(names):  # once per distinct name
        if COMMUNICATION.search(name):
            out[i] = CLASS_COMMUNICATION
        elif MEMORY.search(name):
            out[i] = CLASS_MEMORY
    return out


def gpu_op_mask(kind: np.ndarray) -> np.ndarray:
    return np.isin(kind, np.array(GPU_OP_KINDS, dtype=np.int8))


def group_stats(keys: np.ndarray, values: np.ndarray) -> dict[str, np.ndarray]:
    """count, sum, min, max of ``values`` per distinct key (values int64 ns)."""
    if not len(keys):
        z = np.zeros(0, dtype=np.int64)
        return {"key": z, "count": z, "sum": z, "min": z, "max": z}
    order = np.lexsort((values, keys))
    k = keys[order]
    v = values[order]
    first = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
    last = np.append(first[1:] - 1, len(k) - 1)
    return {
        "key": k[first],
        "count": last - first + 1,
        "sum": np.add.reduceat(v, first),
        "min": v[first],
        "max": v[last],
    }


def kernel_breakdown(store: EventStore) -> list[dict[str, Any]]:
    """Per distinct kernel name (category kernel/Kernel, all devices): count and time in µs,
    sorted by total time, largest first."""
    kind = store.col("kind")
    sel = kind == Kind.KERNEL
    stats = group_stats(store.col("name_id")[sel], store.col("dur_ns")[sel])
    names = store.name_list
    rows = [
        {
            "name": names[k],
            "count": int(c),
            "total_us": s / 1000.0,
            "mean_us": s / c / 1000.0,
            "min_us": lo / 1000.0,
            "max_us": hi / 1000.0,
        }
        for k, c, s, lo, hi in zip(
            stats["key"].tolist(),
            stats["count"].tolist(),
            stats["sum"].tolist(),
            stats["min"].tolist(),
            stats["max"].tolist(),
            strict=True,
        )
    ]
    rows.sort(key=lambda r: (-r["total_us"], r["name"]))
    return rows


def kernel_kinds(store: EventStore) -> dict[str, float]:
    """Sum of durations of all GPU ops (kernels, memcpy, memset) by the class of their name.

    Plain sums: two overlapping ops both count in full.
    """
    kind = store.col("kind")
    sel = gpu_op_mask(kind)
    cls = name_classes(store.name_list)[store.col("name_id")[sel]]
    sums = np.bincount(cls, weights=store.col("dur_ns")[sel], minlength=3)
    return {
        "compute_us": float(sums[CLASS_COMPUTE]) / 1000.0,
        "communication_us": float(sums[CLASS_COMMUNICATION]) / 1000.0,
        "memory_us": float(sums[CLASS_MEMORY]) / 1000.0,
    }


__all__ = [
    "COMMUNICATION",
    "MEMORY",
    "gpu_op_mask",
    "group_stats",
    "kernel_breakdown",
    "kernel_kinds",
    "name_classes",
]
