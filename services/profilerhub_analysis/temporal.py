"""Per GPU: HTA's temporal breakdown (idle / compute / non-compute) and communication overlap."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.intervals import union_length
from profilerhub_analysis.kernels import CLASS_COMMUNICATION, CLASS_COMPUTE, gpu_op_mask, name_classes
from profilerhub_analysis.store import EventStore


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


def comm_comp_overlap(store: EventStore) -> list[dict[str, Any]]:
    """Per device with communication kernels (``^nccl.*Kernel``, RCCL's included): how much of
    the communication time ran alongside computation (HTA's ``get_comm_comp_overlap``).

    ``comm_us`` = |union of comm ops|, ``compute_us`` = |union of compute-class ops|,
    ``overlap_us`` = |both at once|, ``overlap_pct`` = 100 x overlap / comm. Memory ops are neither.
    """
    sel = np.flatnonzero(gpu_op_mask(store.col("kind")))
    if not len(sel):
        return []
    cls = name_classes(store.name_list)[store.col("name_id")[sel]]
    comm = cls == CLASS_COMMUNICATION
    if not comm.any():
        return []
    compute = cls == CLASS_COMPUTE
    start = store.col("ts_ns")[sel]
    end = start + store.col("dur_ns")[sel]
    device = store.col("device")[sel]
    rows = []
    for dev in np.unique(device[comm]).tolist():  # once per GPU
        d = device == dev
        c, k = d & comm, d & compute
        comm_ns = union_length(start[c], end[c])
        compute_ns = union_length(start[k], end[k])
        either = c | k
        overlap_ns = comm_ns + compute_ns - union_length(start[either], end[either])
        rows.append(
            {
                "device": int(dev),
                "comm_kernels": int(c.sum()),
                "comm_us": comm_ns / 1000.0,
                "compute_us": compute_ns / 1000.0,
                "overlap_us": overlap_ns / 1000.0,
                "overlap_pct": 100.0 * overlap_ns / comm_ns if comm_ns else 0.0,
            }
        )
    return rows


__all__ = ["comm_comp_overlap", "temporal_breakdown"]
