"""Training steps (``ProfilerStep#N`` or ``step_N`` annotations, TensorFlow's step markers) and
where each one's time went."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from profilerhub_analysis.intervals import Coverage
from profilerhub_analysis.store import EventStore, Kind
from profilerhub_analysis.sync import cpu_sync_rows

PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")
USER_STEP = re.compile(r"^(?:train[_ ]?)?step[_ #:-]?(\d+)$", re.IGNORECASE)
#: TensorFlow's step markers, as ``tf_trace`` names them: ``"<name> <step>"`` (``train 3``).
TF_STEP = re.compile(r" (\d+)$")
_CPU_KINDS = (Kind.USER_ANNOTATION, Kind.CPU_OP, Kind.OTHER)


def step_rows(store: EventStore) -> tuple[np.ndarray, np.ndarray]:
    """(rows of the step annotations, their step numbers), by start time, one per step number.

    ``ProfilerStep#N`` on a CPU thread wins; ``step_N``-like annotations are used when a trace has
    none; in a TensorFlow trace, its step markers (the only user annotations there). A step
    recorded on several threads counts once (its first occurrence).
    """
    names = store.name_list
    kind = store.col("kind")
    cpu = np.isin(kind, np.array(_CPU_KINDS, dtype=np.int8))
    patterns = [PROFILER_STEP, USER_STEP]
    if store.meta.producer == "tensorflow":
        patterns.append(TF_STEP)
        cpu = kind == Kind.USER_ANNOTATION
    for pattern in patterns:
        number = np.full(max(len(names), 1), -1, dtype=np.int64)
        for i, name in enumerate(names):  # once per distinct name
            m = pattern.search(name) if pattern is TF_STEP else pattern.match(name)
            if m:
                number[i] = int(m.group(1))
        step_no = number[store.col("name_id")]
        rows = np.flatnonzero(cpu & (step_no >= 0))
        if len(rows):
            rows = rows[np.argsort(store.col("ts_ns")[rows], kind="stable")]
            _, first = np.unique(step_no[rows], return_index=True)
            rows = rows[np.sort(first)]
            return rows, step_no[rows]
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)


def steps(store: EventStore) -> list[dict[str, Any]]:
    """Each step's wall time split by what the GPUs were doing, in priority order: kernel running;
    else memcpy/memset running; else a sync in progress (a CPU sync call or a GPU ``cuda_sync``
    record); else CPU-only. The four parts add up to the step's duration."""
    rows, numbers = step_rows(store)
    if not len(rows):
        return []
    ts, dur, kind = store.col("ts_ns"), store.col("dur_ns"), store.col("kind")
    end = ts + dur

    def cover(mask: np.ndarray) -> Coverage:
        sel = np.flatnonzero(mask)
        return Coverage(ts[sel], end[sel])

    k = kind == Kind.KERNEL
    km = k | (kind == Kind.MEMCPY) | (kind == Kind.MEMSET)
    sync = np.zeros(len(kind), dtype=bool)
    sync[cpu_sync_rows(store)] = True
    kms = km | sync | (kind == Kind.CUDA_SYNC)
    lo, hi = ts[rows], end[rows]
    t_k = cover(k).within(lo, hi)
    t_km = cover(km).within(lo, hi)
    t_kms = cover(kms).within(lo, hi)
    span = hi - lo
    names = store.name_list
    out = []
    for i, row in enumerate(rows.tolist()):
        out.append(
            {
                "step": int(numbers[i]),
                "name": names[store.col("name_id")[row]],
                "start_us": ts[row] / 1000.0,
                "duration_us": int(span[i]) / 1000.0,
                "kernel_us": int(t_k[i]) / 1000.0,
                "memory_us": int(t_km[i] - t_k[i]) / 1000.0,
                "sync_us": int(t_kms[i] - t_km[i]) / 1000.0,
                "cpu_only_us": int(span[i] - t_kms[i]) / 1000.0,
            }
        )
    return out


__all__ = ["PROFILER_STEP", "TF_STEP", "USER_STEP", "step_rows", "steps"]
