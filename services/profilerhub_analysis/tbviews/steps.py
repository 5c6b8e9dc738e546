"""The plugin's steps, moved to the GPU, and the window W every GPU figure is taken over.

Steps are the ``ProfilerStep#N`` events in time order (CPU and GPU-side ones alike, quirk T3);
without any, one step ``"0"`` spans the op, python and step events. Then (oracle README §5):

(a) the runtimes, in ts order, are walked against the steps: a runtime wholly inside a step's host
    range gives that step its GPU ops;
(b) when some step has GPU ops, each step starts at ``max(previous step's end, its host start)``
    and ends at the latest end of its GPU ops (or its host end, whichever is later);
(c) trailing steps that launched nothing are dropped, and the last that did too when it launched
    under 80 % of the one before (the profiler likely missed some of its kernels).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profilerhub_analysis.tbviews.parse import T, TbTrace
from profilerhub_analysis.tbviews.tree import Forest

_BIG = float("inf")


@dataclass
class Steps:
    names: list[str]
    ranges: list[tuple[float, float]]
    host_steps: int

    @property
    def window(self) -> tuple[float, float]:
        return self.ranges[0][0], self.ranges[-1][1]


def find_steps(trace: TbTrace, forest: Forest) -> Steps | None:
    """The kept steps, or ``None`` where the window is undefined (no step, op or python event: T13)."""
    t = trace.types
    steps = np.flatnonzero(t == T.STEP)
    names = [str(s) for s in trace.attrs["step"][trace.aux[steps]].tolist()]
    ranges = list(zip(trace.ts[steps].tolist(), trace.end[steps].tolist(), strict=True))
    if not ranges:
        cpu = (t == T.OPERATOR) | (t == T.PYTHON)
        if not cpu.any():
            return None
        names, ranges = ["0"], [(float(trace.ts[cpu].min()), float(trace.end[cpu].max()))]
    host_steps = len(ranges)
    ranges, names = _on_device(trace, forest, ranges, names)
    return Steps(names, ranges, host_steps)


def _step_of_runtimes(
    rt_ts: list[float], rt_end: list[float], steps: list[tuple[float, float]]
) -> np.ndarray:
    """The step each runtime (in ts order) gives its GPU ops, -1 for none: the plugin's walk of
    the runtimes against the steps (a runtime wholly inside the step's host range counts)."""
    out = np.full(len(rt_ts), -1, dtype=np.int64)
    n = len(steps)
    i_step = i_rt = 0
    while i_step < n and i_rt < len(rt_ts):
        start, end = steps[i_step]
        ts = rt_ts[i_rt]
        if ts < start:
            i_rt += 1
        elif rt_end[i_rt] <= end:
            out[i_rt] = i_step
            i_rt += 1
        elif ts < end:
            i_rt += 1
        else:
            i_step += 1
    return out


def _on_device(
    trace: TbTrace, forest: Forest, steps: list[tuple[float, float]], names: list[str]
) -> tuple[list[tuple[float, float]], list[str]]:
    rt = forest.rt_event  # in event order: sorted by ts, ties in the document's order
    step_of_rt = _step_of_runtimes(trace.ts[rt].tolist(), trace.end[rt].tolist(), steps)
    n = len(steps)
    gpu = forest.gpu_event
    owner = forest.rt_of_gpu
    real = (owner >= 0) & (owner < len(rt))
    step_of_gpu = np.full(len(gpu), -1, dtype=np.int64)
    step_of_gpu[real] = step_of_rt[owner[real]]
    in_step = step_of_gpu >= 0
    if not in_step.any():
        return steps, names
    g_ts, g_end = trace.ts[gpu], trace.end[gpu]
    lo = np.full(n, _BIG)
    hi = np.full(n, -_BIG)
    np.minimum.at(lo, step_of_gpu[in_step], g_ts[in_step])
    np.maximum.at(hi, step_of_gpu[in_step], g_end[in_step])
    matched = np.bincount(step_of_gpu[in_step], minlength=n).tolist()
    prev = steps[0][0]
    if lo[0] != _BIG:
        before = ~in_step & (g_end < lo[0])
        if before.any():
            prev = max(prev, float(g_end[before].max()))
    moved: list[tuple[float, float]] = []
    for (start, end), dev_start, dev_end in zip(steps, lo.tolist(), hi.tolist(), strict=True):
        start = max(prev, start)
        end = max(end, start) if dev_start == _BIG else max(end, dev_end)
        end = max(end, start)
        moved.append((start, end))
        prev = end
    if n > 1:
        last = n - 1
        while last >= 0 and matched[last] == 0:
            last -= 1
        if last >= 0:
            keep = last + 1
            if last > 0 and matched[last - 1] * 0.8 > matched[last]:
                keep = last
            moved, names = moved[:keep], names[:keep]
    return moved, names


__all__ = ["Steps", "find_steps"]
