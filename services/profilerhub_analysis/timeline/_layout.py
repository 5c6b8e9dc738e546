"""Build-time layout of the timeline: event order, nesting depth, and rows of one depth.

Events of one lane are stacked like a flame chart: an event that starts while another of the same
lane is still running sits one row below it. The depth of an event is computed without a stack:
with events ordered by ``(lane, start, longest first)``, the depth of event ``i`` is the number of
earlier events of its lane still open at its start, i.e. ``i`` minus the events of its lane that
ended by then. For properly nested events (CPU ops of one thread) that is exactly the flame-chart
depth. Events that overlap without nesting (clock skew, async spans) can land on a row already in
use; ``stack_rows`` moves such an event, with the events that start while it runs, one row down
and repeats until no row has two events overlapping (or a round limit is hit, reported as
``overlaps_left``).

Memory: every per-event array here is a ``scratch`` array (file-backed once large) computed
``scratch.CHUNK`` events at a time, so building the layout of ten million events holds a few
chunks of anonymous memory, not a dozen full-length temporaries: the band keys, the sorted end
keys (sorted in place, in their file), the depths, the rows' order (``scratch.group``, a counting
sort by row key) and the running maxima carry from one chunk to the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import scratch

IntArray = npt.NDArray[np.int64]

#: Rounds of ``stack_rows``; each settles one level of badly nested events (real traces need 1-3).
MAX_STACK_ROUNDS = 64


def band_keys(group: npt.NDArray[np.integer], t: IntArray, t_min: int, span: int) -> IntArray:
    """``group * span + (t - t_min)``: one sortable int64 per (group, time), groups in bands.

    Lets one ``searchsorted`` over a flat array answer per-group time queries. ``t`` must lie in
    ``[t_min, t_min + span)``.
    """
    groups = int(group.max()) + 1 if len(group) else 1
    if groups * span >= 2**62:
        raise ValueError(
            f"the trace spans {span / 1e9 / 86400:.0f} days over {groups} rows, too long to index; "
            "check the trace for events with absurd timestamps"
        )
    return group.astype(np.int64) * np.int64(span) + (t - np.int64(t_min))


def rank_sorted(values: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], IntArray]:
    """``np.unique(values, return_inverse=True)`` for sorted ``values``, without sorting again
    (for strings, an object array: 40x faster than ``np.unique``)."""
    new = np.ones(len(values), dtype=bool)
    new[1:] = values[1:] != values[:-1]
    return values[new], np.cumsum(new) - 1


def ranks_of_sorted(values: npt.NDArray[np.integer]) -> tuple[IntArray, npt.NDArray[np.int32]]:
    """``rank_sorted`` of sorted integers, in chunks: the distinct values and each one's rank
    (``int32``, a ``scratch`` array)."""
    n = len(values)
    distinct: list[np.ndarray] = []
    last = None
    for a in range(0, n, scratch.CHUNK):
        part = values[a : a + scratch.CHUNK]
        new = np.ones(len(part), dtype=bool)
        new[1:] = part[1:] != part[:-1]
        if last is not None and part[0] == last:
            new[0] = False
        distinct.append(np.asarray(part[new], dtype=np.int64))
        last = part[-1]
    ids = np.concatenate(distinct) if distinct else np.zeros(0, dtype=np.int64)
    rank = scratch.empty(n, np.int32)
    for a in range(0, n, scratch.CHUNK):
        rank[a : a + scratch.CHUNK] = np.searchsorted(ids, values[a : a + scratch.CHUNK])
    return ids, rank


def chunked_sum(a: IntArray, b: IntArray) -> IntArray:
    """``a + b`` into a ``scratch`` array, in chunks."""
    out = scratch.empty(len(a), np.int64)
    for at in range(0, len(a), scratch.CHUNK):
        part = slice(at, at + scratch.CHUNK)
        np.add(a[part], b[part], out=out[part])
    return out


def max_end(ts: IntArray, dur: IntArray) -> int:
    """``(ts + dur).max()`` (non-empty), in chunks."""
    return max(
        int((ts[a : a + scratch.CHUNK] + dur[a : a + scratch.CHUNK]).max())
        for a in range(0, len(ts), scratch.CHUNK)
    )


def chunked_extent(values: npt.NDArray[np.integer]) -> tuple[int, int]:
    """``(values.min(), values.max())`` (non-empty ``values``), in chunks."""
    low, high = None, None
    for a in range(0, len(values), scratch.CHUNK):
        part = values[a : a + scratch.CHUNK]
        lo, hi = int(part.min()), int(part.max())
        low = lo if low is None else min(low, lo)
        high = hi if high is None else max(high, hi)
    assert low is not None and high is not None
    return low, high


def _keys(group: npt.NDArray[np.integer], t: IntArray, t_min: int, span: int) -> IntArray:
    """``band_keys`` into a ``scratch`` array, in chunks (``group`` may be any integer array)."""
    if len(group):
        band_keys(np.array([int(group.max())]), np.array([t_min], np.int64), t_min, span)  # the check
    out = scratch.empty(len(t), np.int64)
    for a in range(0, len(t), scratch.CHUNK):
        part = slice(a, a + scratch.CHUNK)
        out[part] = group[part].astype(np.int64) * np.int64(span) + (t[part] - np.int64(t_min))
    return out


def event_order(lane: npt.NDArray[np.integer], ts: IntArray, dur: IntArray) -> IntArray | None:
    """Permutation sorting events by ``(lane, ts, -dur)``; None when they are already in order.

    Input sorted by ``(lane, ts)`` (the event store's order) only needs its ties reordered so a
    parent comes before a child that starts at the same time; that is done on the ties alone.
    """
    n = len(ts)
    if n < 2:
        return None
    reorder = False
    for a in range(0, n - 1, scratch.CHUNK):  # the checks a chunk at a time (one row of overlap)
        b = min(n, a + scratch.CHUNK + 1)
        d_lane, d_ts = np.diff(lane[a:b]), np.diff(ts[a:b])
        if not np.all((d_lane > 0) | ((d_lane == 0) & (d_ts >= 0))):
            return np.lexsort((-dur, ts, lane))
        reorder = reorder or bool(np.any((d_lane == 0) & (d_ts == 0) & (np.diff(dur[a:b]) > 0)))
    if not reorder:
        return None
    d_lane, d_ts = np.diff(lane), np.diff(ts)
    tie = (d_lane == 0) & (d_ts == 0)
    tied = np.flatnonzero(tie)
    members = np.union1d(tied, tied + 1)
    # A member opens a new tie group unless it is tied with the element just before it.
    continues = np.zeros(len(members), dtype=bool)
    has_prev = members > 0
    continues[has_prev] = tie[members[has_prev] - 1]
    group = np.cumsum(~continues)
    order = np.arange(n, dtype=np.int64)
    order[members] = members[np.lexsort((-dur[members], group))]
    return order


def nesting_depth(lane_rank: npt.NDArray[np.integer], ts: IntArray, end: IntArray) -> IntArray:
    """Depth of each event (see the module docstring); events in ``(lane, ts, -dur)`` order.
    A ``scratch`` array, computed in chunks."""
    n = len(ts)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    t_min = chunked_extent(ts)[0]
    span = chunked_extent(end)[1] - t_min + 1
    start_key = _keys(lane_rank, ts, t_min, span)  # sorted: events are in (lane, ts) order
    end_key = _keys(lane_rank, end, t_min, span)
    end_key.sort()  # in place (in its file when large)
    # "ended" also counts zero-length events at the same start that come at or after i (they sort
    # last among equal starts); they are not earlier events, so add them back.
    zero_len = scratch.empty(n + 1, np.int64)
    zero_len[0] = carry = 0
    for a in range(0, n, scratch.CHUNK):
        part = slice(a, a + scratch.CHUNK)
        sums = np.cumsum(ts[part] == end[part]) + carry
        zero_len[a + 1 : a + 1 + len(sums)], carry = sums, int(sums[-1])
    depth = scratch.empty(n, np.int64)
    for a in range(0, n, scratch.CHUNK):
        b = min(n, a + scratch.CHUNK)
        keys = start_key[a:b]
        # Events of earlier lanes all sort before this start; events of later lanes all after it.
        ended = np.searchsorted(end_key, keys, side="right")
        tie_end = np.searchsorted(start_key, keys, side="right")
        depth[a:b] = np.arange(a, b, dtype=np.int64) - ended + (zero_len[tie_end] - zero_len[a:b])
    return depth


@dataclass(frozen=True)
class Rows:
    """Events regrouped into rows (one lane, one depth); each row is in start order."""

    order: IntArray  # row-major position -> position in (lane, ts, -dur) order
    depth: IntArray  # per event, in (lane, ts, -dur) order
    row_lane: IntArray  # per row: lane rank
    row_depth: IntArray  # per row
    row_start: IntArray  # per row: first row-major position; rows are back to back
    overlaps_left: int  # overlapping pairs within a row that stacking could not separate


def stack_rows(lane_rank: npt.NDArray[np.integer], ts: IntArray, end: IntArray, depth: IntArray) -> Rows:
    """Group events into rows by ``(lane, depth)``, moving events down until rows do not overlap.

    Events in ``(lane, ts, -dur)`` order. When an event lands on a row where an earlier event is
    still running, it moves one row down together with every event of its lane that starts
    while it runs (its callees, in a call tree), so a whole subtree moves in one round.
    """
    depth = scratch.concatenate([depth], np.int64)  # a copy: moved down in place
    n = len(ts)
    t_min, t_max = (chunked_extent(ts)[0], chunked_extent(end)[1]) if n else (0, 0)
    span = t_max - t_min + 1
    start_key = _keys(lane_rank, ts, t_min, span)
    order, key = _row_order(lane_rank, depth)
    for _ in range(MAX_STACK_ROUNDS):
        # An event clashes when it starts before an earlier event of its row has ended.
        clash = _clashes(order, key, ts, end, t_min, span)
        if len(clash) == 0:
            break
        moved = np.sort(order[clash])
        end_key = band_keys(lane_rank[moved], end[moved], t_min, span)
        until = np.maximum(np.searchsorted(start_key, end_key, side="left"), moved + 1)
        # Move only the outermost clashing events: the others move with them.
        covered = np.zeros(len(moved), dtype=bool)
        covered[1:] = moved[1:] < np.maximum.accumulate(until)[:-1]
        moved, until = moved[~covered], until[~covered]
        shift = np.zeros(len(moved) * 2, dtype=np.int64)  # +1 at each move's start, -1 past its end
        at = np.concatenate([moved, until])
        shift[: len(moved)], shift[len(moved) :] = 1, -1
        by_at = np.argsort(at, kind="stable")
        at, shift = at[by_at], np.cumsum(shift[by_at])
        for a in range(0, n, scratch.CHUNK):  # depth += the running count of open moves
            b = min(n, a + scratch.CHUNK)
            lo, hi = np.searchsorted(at, [a, b], side="right")
            if lo == 0 and hi == 0:
                continue
            rows = np.arange(a, b, dtype=np.int64)
            opened = np.searchsorted(at[:hi], rows, side="right") - 1
            inside = opened >= 0
            depth[a:b][inside] += shift[opened[inside]]
        order, key = _row_order(lane_rank, depth)
    return _rows(order, key, lane_rank, ts, end, depth)


def _clashes(
    order: np.ndarray, key: np.ndarray, ts: IntArray, end: IntArray, t_min: int, span: int
) -> IntArray:
    """Row-major positions whose event starts before an earlier event of its row has ended."""
    n = len(order)
    found: list[np.ndarray] = []
    carry = np.iinfo(np.int64).min
    for a in range(0, n, scratch.CHUNK):
        rows = order[a : a + scratch.CHUNK]
        row_key = key[rows].astype(np.int64) * np.int64(span)
        row_end = np.maximum.accumulate(row_key + (end[rows] - np.int64(t_min)))
        np.maximum(row_end, carry, out=row_end)
        before = np.empty_like(row_end)
        before[0], before[1:] = carry, row_end[:-1]
        found.append(np.flatnonzero(row_key + (ts[rows] - np.int64(t_min)) < before) + a)
        carry = int(row_end[-1])
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _rows(
    order: np.ndarray, key: np.ndarray, lane_rank: npt.NDArray[np.integer], ts: IntArray, end: IntArray,
    depth: IntArray,
) -> Rows:  # fmt: skip
    n = len(order)
    firsts: list[np.ndarray] = []
    overlaps = 0
    last_key, last_end = None, 0
    for a in range(0, n, scratch.CHUNK):
        rows = order[a : a + scratch.CHUNK]
        row_key = key[rows]
        new = np.ones(len(rows), dtype=bool)
        new[1:] = row_key[1:] != row_key[:-1]
        new[0] = last_key is None or row_key[0] != last_key
        firsts.append(np.flatnonzero(new) + a)
        ends, starts = end[rows], ts[rows]
        overlaps += int(np.count_nonzero(~new[1:] & (ends[:-1] > starts[1:])))
        if not new[0] and last_end > starts[0]:
            overlaps += 1
        last_key, last_end = row_key[-1], int(ends[-1])
    row_first = np.concatenate(firsts).astype(np.int64) if firsts else np.zeros(0, dtype=np.int64)
    first_event = np.asarray(order[row_first], dtype=np.int64)
    return Rows(
        order=order,
        depth=depth,
        row_lane=np.asarray(lane_rank[first_event], dtype=np.int64),
        row_depth=np.asarray(depth[first_event], dtype=np.int64),
        row_start=row_first,
        overlaps_left=overlaps,
    )


def _row_order(lane_rank: npt.NDArray[np.integer], depth: IntArray) -> tuple[np.ndarray, np.ndarray]:
    """Stable order by (lane, depth) (``scratch.group``: a counting sort by the row key, in chunks),
    and the per-event row key it sorts by."""
    n = len(depth)
    levels = chunked_extent(depth)[1] + 1 if n else 1
    lanes = int(lane_rank[-1]) + 1 if n else 1  # lane ranks are sorted
    dtype = np.int32 if lanes * levels < 2**31 else np.int64
    key = scratch.empty(n, dtype)
    for a in range(0, n, scratch.CHUNK):
        part = slice(a, a + scratch.CHUNK)
        key[part] = lane_rank[part].astype(np.int64) * levels + depth[part]
    if lanes * levels > max(4 * n, 1 << 20):  # too many keys for a counting sort's tables
        return np.argsort(key, kind="stable").astype(np.int64), key
    order, _ = scratch.group(key, lanes * levels)
    return order, key
