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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

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


def event_order(lane: npt.NDArray[np.integer], ts: IntArray, dur: IntArray) -> IntArray | None:
    """Permutation sorting events by ``(lane, ts, -dur)``; None when they are already in order.

    Input sorted by ``(lane, ts)`` (the event store's order) only needs its ties reordered so a
    parent comes before a child that starts at the same time; that is done on the ties alone.
    """
    n = len(ts)
    if n < 2:
        return None
    d_lane, d_ts = np.diff(lane), np.diff(ts)
    if not np.all((d_lane > 0) | ((d_lane == 0) & (d_ts >= 0))):
        return np.lexsort((-dur, ts, lane))
    tie = (d_lane == 0) & (d_ts == 0)
    if not np.any(tie & (np.diff(dur) > 0)):
        return None
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
    """Depth of each event (see the module docstring); events in ``(lane, ts, -dur)`` order."""
    n = len(ts)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    t_min = int(ts.min())
    span = int(end.max()) - t_min + 1
    start_key = band_keys(lane_rank, ts, t_min, span)
    # Events of earlier lanes all sort before this start; events of later lanes all after it.
    ended = np.searchsorted(np.sort(band_keys(lane_rank, end, t_min, span)), start_key, side="right")
    # "ended" also counts zero-length events at the same start that come at or after i (they sort
    # last among equal starts); they are not earlier events, so add them back.
    tie_end = np.searchsorted(start_key, start_key, side="right")
    zero_len = np.concatenate([[0], np.cumsum(ts == end)])
    at = np.arange(n, dtype=np.int64)
    return at - ended + (zero_len[tie_end] - zero_len[at])


@dataclass(frozen=True)
class Rows:
    """Events regrouped into rows (one lane, one depth); each row is in start order."""

    order: IntArray  # row-major position -> position in (lane, ts, -dur) order
    depth: IntArray  # per event, in (lane, ts, -dur) order
    row_lane: IntArray  # per row: lane rank
    row_depth: IntArray  # per row
    row_start: IntArray  # per row: first row-major position; rows are back to back
    overlaps_left: int  # overlapping pairs within a row that stacking could not separate


def stack_rows(lane_rank: IntArray, ts: IntArray, end: IntArray, depth: IntArray) -> Rows:
    """Group events into rows by ``(lane, depth)``, moving events down until rows do not overlap.

    Events in ``(lane, ts, -dur)`` order. When an event lands on a row where an earlier event is
    still running, it moves one row down together with every event of its lane that starts
    while it runs (its callees, in a call tree), so a whole subtree moves in one round.
    """
    depth = depth.copy()
    n = len(ts)
    t_min = int(ts.min()) if n else 0
    span = int(end.max()) - t_min + 1 if n else 1
    start_key = band_keys(lane_rank, ts, t_min, span)
    end_key = band_keys(lane_rank, end, t_min, span)
    for _ in range(MAX_STACK_ROUNDS):
        order, key = _row_order(lane_rank, depth)
        # An event clashes when it starts before an earlier event of its row has ended.
        row_end = np.maximum.accumulate(band_keys(key[order], end[order], t_min, span))
        clash = np.flatnonzero(band_keys(key[order], ts[order], t_min, span)[1:] < row_end[:-1]) + 1
        if len(clash) == 0:
            break
        moved = np.sort(order[clash])
        until = np.maximum(np.searchsorted(start_key, end_key[moved], side="left"), moved + 1)
        # Move only the outermost clashing events: the others move with them.
        covered = np.zeros(len(moved), dtype=bool)
        covered[1:] = moved[1:] < np.maximum.accumulate(until)[:-1]
        moved, until = moved[~covered], until[~covered]
        shift = np.zeros(n + 1, dtype=np.int64)
        np.add.at(shift, moved, 1)
        np.add.at(shift, until, -1)
        depth += np.cumsum(shift[:n])
    else:
        order, key = _row_order(lane_rank, depth)
    sorted_key = key[order]
    same_row = sorted_key[1:] == sorted_key[:-1]
    row_first = np.flatnonzero(np.concatenate([[n > 0], ~same_row]))
    first_event = order[row_first]
    return Rows(
        order=order,
        depth=depth,
        row_lane=lane_rank[first_event].astype(np.int64),
        row_depth=depth[first_event],
        row_start=row_first.astype(np.int64),
        overlaps_left=int(np.count_nonzero(same_row & (end[order][:-1] > ts[order][1:]))),
    )


def _row_order(lane_rank: IntArray, depth: IntArray) -> tuple[IntArray, npt.NDArray[np.integer]]:
    """Stable order by (lane, depth), and the per-event row key it sorts by."""
    levels = int(depth.max()) + 1 if len(depth) else 1
    key = lane_rank.astype(np.int64) * levels + depth
    # Small keys sort by radix in numpy's stable sort, several times faster than int64's timsort.
    if len(key) and key.max() < 2**16:
        key = key.astype(np.uint16)
    return np.argsort(key, kind="stable").astype(np.int64), key
