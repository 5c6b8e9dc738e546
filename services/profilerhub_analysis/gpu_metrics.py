"""The PyTorch TensorBoard plugin's GPU overview figures: utilisation, SM efficiency, occupancy.

Re-implemented from kineto's ``tb_plugin`` (``GPUMetricsParser`` and the step parser), so a user
moving from TensorBoard sees the same numbers. All three are measured inside one window ``W``, the
plugin's "all steps" span:

1. steps are the ``ProfilerStep#N`` events (CPU op, user annotation and GPU user annotation
   categories alike), by start time; without any, one step spanning the CPU ops;
2. each runtime call (``cat`` runtime/cuda_runtime) that lies inside a step (scanned with the
   plugin's two-pointer merge: a call that starts before the current step is skipped for good)
   attributes the GPU ops it launched to that step;
3. when any op was attributed, steps are stretched to the device: each step starts no earlier
   than the previous one ended (the first no earlier than the end of the unattributed ops that
   finished before the first attributed one started) and ends no earlier than its last op, and
   trailing steps that launched nothing, or under 80 % of the previous step's ops, are dropped.

``W`` = [first step's start, last step's end]. Per device (``pid`` of its kernels; memcpy and
memset are not kernels here): ``gpu_utilization_pct`` = 100 x |union of kernels ∩ W| / |W|;
``sm_efficiency_pct`` = 100 x Σ over time segments in W of min(Σ ``blocks per SM`` of the running
kernels, 1) x length / |W|; ``achieved_occupancy_pct`` = the ``est. achieved occupancy %`` of the
kernels weighted by their time inside W.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.intervals import Coverage
from profilerhub_analysis.kernels import gpu_op_mask
from profilerhub_analysis.store import EventStore, Kind

STEP_PREFIX = "ProfilerStep#"
_STEP_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.GPU_USER_ANNOTATION)
#: A trailing step that launched fewer than this share of the previous step's ops is dropped.
TAIL_STEP_RATIO = 0.8


def _step_spans(store: EventStore) -> tuple[np.ndarray, np.ndarray] | None:
    names = store.name_list
    is_step = np.array([n.startswith(STEP_PREFIX) for n in names] or [False], dtype=bool)
    kind, ts, dur = store.col("kind"), store.col("ts_ns"), store.col("dur_ns")
    rows = np.flatnonzero(is_step[store.col("name_id")] & np.isin(kind, np.array(_STEP_KINDS, np.int8)))
    if len(rows):
        rows = rows[np.argsort(ts[rows], kind="stable")]
        return ts[rows].copy(), ts[rows] + dur[rows]
    cpu = np.flatnonzero(kind == Kind.CPU_OP)
    if not len(cpu):
        return None
    return np.array([ts[cpu].min()]), np.array([(ts[cpu] + dur[cpu]).max()])


def step_window(store: EventStore) -> tuple[int, int] | None:
    """The plugin's "all steps" window in ns (see the module docstring); None when undefined."""
    spans = _step_spans(store)
    if spans is None:
        return None
    s_start, s_end = spans
    ts, dur, kind, launch = store.col("ts_ns"), store.col("dur_ns"), store.col("kind"), store.col("launch")

    runtime = np.flatnonzero(kind == Kind.RUNTIME)
    runtime = runtime[np.argsort(ts[runtime], kind="stable")]
    r_start, r_end = ts[runtime], ts[runtime] + dur[runtime]
    # The merge: step i consumes the runtime calls from where step i-1 stopped up to the first
    # one starting at or after its end; a consumed call counts when it lies inside the step.
    stop = np.maximum.accumulate(np.searchsorted(r_start, s_end, side="left"))
    begin = np.concatenate([[0], stop[:-1]])
    step_of_call = np.full(len(runtime), -1, dtype=np.int64)
    owner = np.repeat(np.arange(len(s_start)), stop - begin)
    call = np.arange(len(owner)) if len(owner) else np.zeros(0, np.int64)
    inside = (r_start[call] >= s_start[owner]) & (r_end[call] <= s_end[owner])
    step_of_call[call[inside]] = owner[inside]

    gpu = np.flatnonzero(gpu_op_mask(kind) & (launch >= 0))
    call_pos = np.full(len(ts), -1, dtype=np.int64)
    call_pos[runtime] = np.arange(len(runtime))
    pos = call_pos[launch[gpu]]
    matched = pos >= 0
    matched[matched] = step_of_call[pos[matched]] >= 0
    gpu_m = gpu[matched]
    op_step = step_of_call[pos[matched]]
    n_steps = len(s_start)
    counts = np.bincount(op_step, minlength=n_steps)
    if not len(gpu_m):
        return int(s_start[0]), int(s_end[-1])

    big = np.iinfo(np.int64).max
    dev_min = np.full(n_steps, big, dtype=np.int64)
    dev_max = np.full(n_steps, -big, dtype=np.int64)
    np.minimum.at(dev_min, op_step, ts[gpu_m])
    np.maximum.at(dev_max, op_step, ts[gpu_m] + dur[gpu_m])

    prev_end = int(s_start[0])
    if counts[0]:
        all_ops = np.flatnonzero(gpu_op_mask(kind))
        unmatched = np.setdiff1d(all_ops, gpu_m, assume_unique=True)
        ends = ts[unmatched] + dur[unmatched]
        before = ends[ends < dev_min[0]]
        if len(before):
            prev_end = max(prev_end, int(before.max()))
    starts, finishes = s_start.copy(), s_end.copy()
    for i in range(n_steps):  # once per step
        start = max(prev_end, int(s_start[i]))
        end = int(s_end[i])
        end = max(end, start) if not counts[i] else max(end, int(dev_max[i]), start)
        starts[i], finishes[i] = start, end
        prev_end = end
    keep = n_steps
    if n_steps > 1:
        launched = np.flatnonzero(counts > 0)
        last = int(launched[-1])
        keep = last + 1
        if last > 0 and counts[last - 1] * TAIL_STEP_RATIO > counts[last]:
            keep = last
    return int(starts[0]), int(finishes[keep - 1])


def _sm_efficiency(start: np.ndarray, end: np.ndarray, blocks: np.ndarray, w0: int, w1: int) -> float | None:
    """Σ over segments inside [w0, w1) of min(Σ blocks per SM running, 1) x length, or None."""
    s, e = np.clip(start, w0, w1), np.clip(end, w0, w1)
    keep = e > s
    if not keep.any():
        return None
    s, e, v = s[keep], e[keep], blocks[keep]
    when = np.concatenate([s, e])
    delta = np.concatenate([v, -v])
    order = np.argsort(when, kind="stable")
    when, level = when[order], np.cumsum(delta[order])
    length = np.diff(when).astype(np.float64)
    return float((np.minimum(np.maximum(level[:-1], 0.0), 1.0) * length).sum())


def gpu_metrics(store: EventStore) -> list[dict[str, Any]]:
    """Per device with kernels: the plugin's GPU utilisation, estimated SM efficiency and
    achieved occupancy inside its step window (see the module docstring); ``[]`` without
    kernels or without a window."""
    sel = np.flatnonzero(store.col("kind") == Kind.KERNEL)
    if not len(sel):
        return []
    window = step_window(store)
    if window is None:
        return []
    w0, w1 = window
    span = w1 - w0
    start = store.col("ts_ns")[sel]
    end = start + store.col("dur_ns")[sel]
    device = store.col("device")[sel]
    blocks = store.col("blocks_per_sm")[sel].astype(np.float64)
    occupancy = store.col("occupancy")[sel].astype(np.float64)
    inside = np.maximum(np.minimum(end, w1) - np.maximum(start, w0), 0)
    rows = []
    for dev in np.unique(device).tolist():  # once per GPU
        d = device == dev
        busy = int(Coverage(start[d], end[d]).within(np.array([w0]), np.array([w1]))[0]) if span > 0 else 0
        b = d & (blocks > 0)
        sm = _sm_efficiency(start[b], end[b], blocks[b], w0, w1) if b.any() and span > 0 else None
        o = d & (occupancy >= 0) & (inside > 0)
        weight = float(inside[o].sum())
        rows.append(
            {
                "device": int(dev),
                "window_start_us": w0 / 1000.0,
                "window_end_us": w1 / 1000.0,
                "window_us": span / 1000.0,
                "kernels": int(d.sum()),
                "kernel_busy_us": busy / 1000.0,
                "gpu_utilization_pct": 100.0 * busy / span if span > 0 else None,
                "sm_efficiency_pct": 100.0 * sm / span if sm is not None else None,
                "achieved_occupancy_pct": float((occupancy[o] * inside[o]).sum()) / weight
                if weight
                else None,
            }
        )
    return rows


__all__ = ["STEP_PREFIX", "TAIL_STEP_RATIO", "gpu_metrics", "step_window"]
