"""Sets of time ranges as sorted, disjoint ``(start, end)`` lists (the plugin's ``range_utils``)."""

from __future__ import annotations

from collections.abc import Iterable

Ranges = list[tuple[float, float]]


def merge(ranges: Iterable[tuple[float, float]]) -> Ranges:
    """The union, sorted; touching ranges join."""
    out: Ranges = []
    for start, end in sorted(ranges, key=lambda r: r[0]):
        if not out:
            out.append((start, end))
        elif end > out[-1][1]:
            if start <= out[-1][1]:
                out[-1] = (out[-1][0], end)
            else:
                out.append((start, end))
    return out


def intersect(a: Ranges, b: Ranges) -> Ranges:
    out: Ranges = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a: Ranges, b: Ranges) -> Ranges:
    out: Ranges = []
    j = 0
    for start, end in a:
        cur = start
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < end:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            if cur >= end:
                break
            k += 1
        if cur < end:
            out.append((cur, end))
    return out


def total(ranges: Ranges) -> float:
    return sum(end - start for start, end in ranges)


__all__ = ["Ranges", "intersect", "merge", "subtract", "total"]
