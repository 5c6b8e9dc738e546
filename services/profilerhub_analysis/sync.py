"""Synchronisation: CPU calls that block on the GPU, and the GPU-side sync records."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.kernels import group_stats
from profilerhub_analysis.store import EventStore, Kind

SYNC_CALLS = frozenset(
    f"{api}{call}"
    for api in ("cuda", "hip")
    for call in ("DeviceSynchronize", "StreamSynchronize", "EventSynchronize", "StreamWaitEvent")
)


def sync_name_mask(names: list[str]) -> np.ndarray:
    """Indexed by name_id: True for the synchronising runtime calls (CUDA and HIP)."""
    return np.array([n in SYNC_CALLS for n in names] or [False], dtype=bool)


def cpu_sync_rows(store: EventStore) -> np.ndarray:
    """Rows of runtime/driver calls that synchronise (cudaDeviceSynchronize, hipStreamWaitEvent...)."""
    kind = store.col("kind")
    is_call = (kind == Kind.RUNTIME) | (kind == Kind.DRIVER)
    return np.flatnonzero(is_call & sync_name_mask(store.name_list)[store.col("name_id")])


def sync_ops(store: EventStore) -> list[dict[str, Any]]:
    """Per name: CPU-side sync calls (``side: cpu``) and ``cuda_sync`` records (``side: gpu``)."""
    names = store.name_list
    rows = []
    for side, sel in (
        ("cpu", cpu_sync_rows(store)),
        ("gpu", np.flatnonzero(store.col("kind") == Kind.CUDA_SYNC)),
    ):
        stats = group_stats(store.col("name_id")[sel], store.col("dur_ns")[sel])
        for k, c, s, hi in zip(
            stats["key"].tolist(),
            stats["count"].tolist(),
            stats["sum"].tolist(),
            stats["max"].tolist(),
            strict=True,
        ):
            rows.append(
                {
                    "name": names[k],
                    "side": side,
                    "count": int(c),
                    "total_us": s / 1000.0,
                    "mean_us": s / c / 1000.0,
                    "max_us": hi / 1000.0,
                }
            )
    rows.sort(key=lambda r: -r["total_us"])
    return rows


__all__ = ["SYNC_CALLS", "cpu_sync_rows", "sync_name_mask", "sync_ops"]
