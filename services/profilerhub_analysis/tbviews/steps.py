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
    names = [str(trace.events[i].step) for i in steps]
    ranges = list(zip(trace.ts[steps].tolist(), trace.end[steps].tolist(), strict=True))
    if not ranges:
        cpu = (t == T.OPERATOR) | (t == T.PYTHON)
        if not cpu.any():
            return None
        # the events' own numbers (int µs stay int), as the plugin's min/max keeps them
        starts = [trace.events[i].ts for i in np.flatnonzero(cpu)]
        ends = [trace.events[i].end for i in np.flatnonzero(cpu)]
        names, ranges = ["0"], [(min(starts), max(ends))]
    host_steps = len(ranges)
    ranges, names = _on_device(forest, ranges, names)
    return Steps(names, ranges, host_steps)


def _on_device(
    forest: Forest, steps: list[tuple[float, float]], names: list[str]
) -> tuple[list[tuple[float, float]], list[str]]:
    runtimes = sorted(forest.runtimes, key=lambda r: r.event.ts if r.event else 0.0)
    n = len(steps)
    dev: list[tuple[float, float]] = [(_BIG, -_BIG)] * n
    matched = [0] * n
    in_step: set[int] = set()
    i_step = i_rt = 0
    lo, hi = _BIG, -_BIG
    while i_step < n and i_rt < len(runtimes):
        start, end = steps[i_step]
        ev = runtimes[i_rt].event
        assert ev is not None
        if ev.ts < start:
            i_rt += 1
        elif ev.end <= end:
            for g in runtimes[i_rt].gpu_ops:
                lo, hi = min(g.ts, lo), max(g.end, hi)
                in_step.add(id(g))
                matched[i_step] += 1
            i_rt += 1
        elif ev.ts < end:
            i_rt += 1
        else:
            dev[i_step] = (lo, hi)
            i_step += 1
            lo, hi = _BIG, -_BIG
    while i_step < n:
        dev[i_step] = (lo, hi)
        lo, hi = _BIG, -_BIG
        i_step += 1
    if not in_step:
        return steps, names
    prev = steps[0][0]
    if dev[0][0] != _BIG:
        for g in forest.gpu_ops:
            if id(g) not in in_step and g.end < dev[0][0]:
                prev = max(prev, g.end)
    moved: list[tuple[float, float]] = []
    for (start, end), (dev_start, dev_end) in zip(steps, dev, strict=True):
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
