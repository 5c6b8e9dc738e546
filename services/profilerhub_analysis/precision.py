"""Kernel numeric precision guessed from kernel names, like SageMaker Profiler's dashboard.

Library kernels spell their data type in the name (``ampere_fp16_s16816gemm``,
``cutlass_80_tensorop_bf16_s16816gemm``, ``sm90_xmma_gemm_e4m3...``, ``at::native::...<float>``).
The first matching rule wins; names with no hint are ``unknown``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.store import EventStore, Kind

#: (precision, name fragments), matched against the lower-cased kernel name in this order.
RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("fp8", ("fp8", "e4m3", "e5m2", "f8f8")),
    ("int8", ("int8", "i8i8", "imma", "s8s8", "u8s8", "_i8_", "signed char")),
    ("bf16", ("bf16", "bfloat16")),
    ("fp16", ("fp16", "f16f16", "half", "h884", "h1688", "h16816", "hmma", "_f16_")),
    ("tf32", ("tf32", "s1688gemm", "s16816gemm", "tensorop_s")),
    ("fp64", ("fp64", "double", "dgemm", "d884", "_f64_")),
    ("fp32", ("fp32", "float", "sgemm", "f32f32", "_f32_", "s884")),
)
PRECISIONS = tuple(name for name, _ in RULES) + ("unknown",)


def kernel_precision(name: str) -> str:
    """The first precision whose name fragment occurs in ``name`` (case-insensitive), else unknown."""
    low = name.lower()
    for label, fragments in RULES:
        if any(f in low for f in fragments):
            return label
    return "unknown"


def precision_breakdown(store: EventStore) -> list[dict[str, Any]]:
    """Kernel count and time per guessed precision, largest time first."""
    sel = np.flatnonzero(store.col("kind") == Kind.KERNEL)
    if not len(sel):
        return []
    ids, inverse = np.unique(store.col("name_id")[sel], return_inverse=True)
    names = store.name_list
    label_of = np.array([PRECISIONS.index(kernel_precision(names[i])) for i in ids.tolist()])
    label = label_of[inverse.reshape(-1)]
    dur = store.col("dur_ns")[sel]
    counts = np.bincount(label, minlength=len(PRECISIONS))
    totals = np.bincount(label, weights=dur, minlength=len(PRECISIONS))
    grand = float(totals.sum()) or 1.0
    rows: list[dict[str, Any]] = [
        {
            "precision": p,
            "count": int(counts[i]),
            "total_us": float(totals[i]) / 1000.0,
            "pct": 100.0 * float(totals[i]) / grand,
        }
        for i, p in enumerate(PRECISIONS)
        if counts[i]
    ]
    rows.sort(key=lambda r: -r["total_us"])
    return rows


__all__ = ["PRECISIONS", "RULES", "kernel_precision", "precision_breakdown"]
