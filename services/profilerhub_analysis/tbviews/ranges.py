"""Sets of time ranges (the plugin's ``range_utils``), as numpy: ``Ranges`` is an ``(n, 2)`` float64
array of sorted, disjoint ``[start, end)`` rows. Every operation is vectorised: the union by a
running maximum of ends, the intersection of two sets by the pairs ``searchsorted`` finds (each
range of one set meets a contiguous run of the other), the difference as the intersection with the
other set's gaps.
"""

from __future__ import annotations

import numpy as np

Ranges = np.ndarray
EMPTY: Ranges = np.empty((0, 2), dtype=np.float64)


def merge(starts: np.ndarray, ends: np.ndarray) -> Ranges:
    """The union of ``[starts[i], ends[i])``, sorted; touching ranges join (as the plugin's)."""
    if len(starts) == 0:
        return EMPTY
    order = np.argsort(starts, kind="stable")
    s = np.asarray(starts, dtype=np.float64)[order]
    e = np.maximum.accumulate(np.asarray(ends, dtype=np.float64)[order])
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return np.column_stack((s[first], e[last]))


class SortedMerge:
    """``merge`` of ranges that arrive in batches sorted by start, each batch after the last
    (``add``; ``ranges()`` at the end): the range still open at a batch's end is carried into the
    next, so nothing holds the ranges before their union."""

    def __init__(self) -> None:
        self._parts: list[Ranges] = []
        self._open_s, self._open_e = np.empty(0), np.empty(0)

    def add(self, starts: np.ndarray, ends: np.ndarray) -> None:
        s = np.concatenate((self._open_s, starts))
        if not len(s):
            return
        e = np.maximum.accumulate(np.concatenate((self._open_e, np.asarray(ends, dtype=np.float64))))
        new = np.ones(len(s), dtype=bool)
        new[1:] = s[1:] > e[:-1]
        first = np.flatnonzero(new)
        last = np.append(first[1:] - 1, len(s) - 1)
        self._parts.append(np.column_stack((s[first[:-1]], e[last[:-1]])))
        self._open_s, self._open_e = s[first[-1:]], e[last[-1:]]

    def ranges(self) -> Ranges:
        out = np.concatenate([*self._parts, np.column_stack((self._open_s, self._open_e))])
        return out if len(out) else EMPTY


def of(pairs: list[tuple[float, float]]) -> Ranges:
    if not pairs:
        return EMPTY
    a = np.asarray(pairs, dtype=np.float64)
    return merge(a[:, 0], a[:, 1])


def intersect(a: Ranges, b: Ranges) -> Ranges:
    if len(a) == 0 or len(b) == 0:
        return EMPTY
    lo_idx = np.searchsorted(b[:, 1], a[:, 0], side="right")  # first b ending after a starts
    hi_idx = np.searchsorted(b[:, 0], a[:, 1], side="left")  # b starting before a ends
    counts = np.maximum(hi_idx - lo_idx, 0)
    ai = np.repeat(np.arange(len(a)), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    bi = np.repeat(lo_idx, counts) + offsets
    lo = np.maximum(a[ai, 0], b[bi, 0])
    hi = np.minimum(a[ai, 1], b[bi, 1])
    keep = lo < hi
    return np.column_stack((lo[keep], hi[keep]))


def subtract(a: Ranges, b: Ranges) -> Ranges:
    if len(a) == 0 or len(b) == 0:
        return a
    gaps = np.column_stack((np.append(-np.inf, b[:, 1]), np.append(b[:, 0], np.inf)))
    return intersect(a, gaps[gaps[:, 0] < gaps[:, 1]])


def total(r: Ranges) -> float:
    return float((r[:, 1] - r[:, 0]).sum()) if len(r) else 0.0


def within(r: Ranges, start: float, end: float) -> float:
    """|r ∩ [start, end)|."""
    if len(r) == 0:
        return 0.0
    return float(np.maximum(np.minimum(r[:, 1], end) - np.maximum(r[:, 0], start), 0).sum())


__all__ = ["EMPTY", "Ranges", "SortedMerge", "intersect", "merge", "of", "subtract", "total", "within"]
