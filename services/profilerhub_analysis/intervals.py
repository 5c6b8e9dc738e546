"""Interval arithmetic on arrays of [start, end) pairs (ns), vectorised.

The analyses measure busy time as the length of a union of intervals, and time inside windows
(steps, utilisation buckets) as the length of that union clipped to each window.
"""

from __future__ import annotations

import numpy as np


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge intervals into sorted, disjoint ones (touching intervals merge)."""
    if not len(starts):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    order = np.argsort(starts, kind="stable")
    s = starts[order]
    e = np.maximum.accumulate(ends[order])
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], e[last]


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length covered by at least one interval."""
    s, e = union(starts, ends)
    return int((e - s).sum())


class Coverage:
    """A union of intervals, queried for how much of any window it covers."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray) -> None:
        self.starts, self.ends = union(starts, ends)
        self._cum = np.concatenate([[0], np.cumsum(self.ends - self.starts)]).astype(np.int64)

    @property
    def total(self) -> int:
        return int(self._cum[-1])

    def _before(self, x: np.ndarray) -> np.ndarray:
        """Covered length in (-inf, x] for each x."""
        k = np.searchsorted(self.starts, x, side="right")
        covered = self._cum[k]
        inside = k > 0
        last_end = self.ends[np.maximum(k - 1, 0)] if len(self.ends) else np.zeros_like(x)
        overshoot = np.where(inside, np.maximum(last_end - x, 0), 0)
        return covered - overshoot

    def within(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Covered length inside each window [lo, hi)."""
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        if not len(self.starts):
            return np.zeros(np.broadcast(lo, hi).shape, dtype=np.int64)
        return self._before(hi) - self._before(lo)


__all__ = ["Coverage", "union", "union_length"]
