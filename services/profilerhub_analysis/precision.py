"""Kernel numeric precision guessed from kernel names, like SageMaker Profiler's dashboard.

Library kernels spell their data type in the name (``ampere_fp16_s16816gemm``,
``cutlass_80_tensorop_bf16_s16816gemm``, ``sm90_xmma_gemm_e4m3...``, ``at::native::...<float>``).
The first matching rule wins; names with no hint are ``unknown``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from profilerhub_analysis.store import EventStore, Kind

RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("fp8", re.compile(r"fp8|e4m3|e5m2|f8f8", re.IGNORECASE)),
    ("int8", re.compile(r"int8|i8i8|imma|s8s8|u8s8|_i8_|signed char", re.IGNORECASE)),
    ("bf16", re.compile(r"bf16|bfloat16|BFloat16", re.IGNORECASE)),
    ("fp16", re.compile(r"fp16|f16f16|half|h884|h1688|h16816|hmma|c10::Half|_f16_", re.IGNORECASE)),
    ("tf32", re.compile(r"tf32|s1688gemm|s16816gemm|tensorop_s", re.IGNORECASE)),
    ("fp64", re.compile(r"fp64|double|dgemm|d884|_f64_", re.IGNORECASE)),
    ("fp32", re.compile(r"fp32|float|sgemm|f32f32|_f32_|s884", re.IGNORECASE)),
)
PRECISIONS = tuple(name for name, _ in RULES) + ("unknown",)


def kernel_precision(name: str) -> str:
    for label, pattern in RULES:
        if pattern.search(name):
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
    rows = [
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
