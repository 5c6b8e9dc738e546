"""The timeline index: built once per trace, then answers window queries at any zoom.

Layout. Events are regrouped into rows, one per (lane, depth) (see ``_layout``); inside a row they
are in start order and do not overlap, so their ends are sorted too. All rows are stored back to
back in flat arrays, and each start and end is also stored as a "band key" ``row * span + (t -
t_min)``, so one ``searchsorted`` over the whole flat array finds a time in any row.

Query for a window ``[t0, t1)`` of ``width`` pixels of ``P`` ns, per row (all rows at once):

1. the events overlapping the window are one index range ``[lo, hi)``: two binary searches;
2. events at least ``min_px`` pixels long are found with ``RangeAtLeast`` on durations (cost ~
   range/64 + answer) and returned as they are;
3. the range is cut around them and wherever the gap between two neighbours is a pixel or more
   (``RangeAtLeast`` on the gaps); each piece between cuts is one block of narrow events. Its
   count is an index difference, its busy time a difference of prefix sums of durations, its
   label the longest event's (``RangeArgMax``).

Long events and gaps of a pixel or more each take a pixel, so a row yields at most about
``2 x width`` items (``2 x width + 5`` with ``min_px >= 1``), and a query costs O(rows x (range/64
+ width)) whatever the zoom: it never touches the events a zoomed-out view merges. Each lane's
answer is also capped at ``max_items_per_px x width`` items: rows are kept top-down while they fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .. import scratch
from ._layout import (
    band_keys,
    chunked_extent,
    chunked_sum,
    event_order,
    max_end,
    nesting_depth,
    rank_sorted,
    ranks_of_sorted,
    stack_rows,
)
from ._ranges import RangeArgMax, RangeAtLeast, held_bytes
from .counters import CounterIndex, CounterTrack
from .window import Blocks, Events, LaneWindow, Window

if TYPE_CHECKING:
    from ..store import EventStore

IntArray = npt.NDArray[np.int64]

#: Widest window a query may ask for, in pixel columns (a 16K display).
MAX_WIDTH_PX = 16_384


def column_edges(t0_ns: int, t1_ns: int, width_px: int) -> IntArray:
    """``width_px + 1`` integer edges: column ``c`` holds times ``[edges[c], edges[c + 1])``."""
    span = t1_ns - t0_ns
    c = np.arange(width_px + 1, dtype=np.int64)
    if span * width_px < 2**62:
        offset = (c * span + width_px - 1) // width_px  # exact ceil(c * span / width)
    else:
        offset = np.ceil(c * (span / width_px)).astype(np.int64)
    return t0_ns + offset


class TimelineIndex:
    """Events (and counters) of one trace, indexed for ``window`` queries; see the module docstring.

    Build with ``TimelineIndex.build``. Read-only afterwards, so one index can serve concurrent
    queries.
    """

    names: Sequence[str]
    counter_names: Sequence[str] | None
    lane_ids: IntArray  # lanes that have events, ascending
    depth: IntArray  # per input event: its row in the lane's flame chart (0 = top)
    t_min: int  # first start (counters included)
    t_end: int  # last end (counters included)
    overlaps_left: int  # pairs of events left overlapping in one row (badly nested input)
    counters: CounterIndex | None

    # Flat row-major event arrays (see the module docstring) and per-row tables.
    _ts: IntArray
    _dur: IntArray
    _name: npt.NDArray[np.int32]
    _kind: npt.NDArray[np.int8]
    _event_id: IntArray
    _key: IntArray  # band key of the start
    _end_max: IntArray  # running max of the band key of the end
    _busy_prefix: IntArray  # _busy_prefix[i] = sum of _dur[:i]
    _longest: RangeArgMax  # over _dur
    _gaps: RangeAtLeast  # over the gap after each event in its row (0 after a row's last)
    _row_lane: IntArray  # lane rank
    _row_depth: IntArray
    _row_start: IntArray
    _row_stop: IntArray
    _span: int

    @classmethod
    def build(
        cls,
        ts_ns: npt.ArrayLike,
        dur_ns: npt.ArrayLike,
        lane_id: npt.ArrayLike,
        name_id: npt.ArrayLike,
        names: Sequence[str],
        kind: npt.ArrayLike | None = None,
        *,
        counters: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike] | None = None,
        counter_names: Sequence[str] | None = None,
    ) -> TimelineIndex:
        """Index events given as parallel arrays, best sorted by ``(lane_id, ts_ns)``.

        ``counters`` is ``(counter_id, ts_ns, value)``; ``counter_names[counter_id]`` names one.
        Events with a negative duration are an error; any order is accepted (sorting costs time).
        """
        self = cls.__new__(cls)
        ts = np.asarray(ts_ns, dtype=np.int64)
        dur = np.asarray(dur_ns, dtype=np.int64)
        lane = np.asarray(lane_id)
        if lane.dtype.kind not in "iu":  # the store's int32 as it is: no full-length int64 copy
            lane = lane.astype(np.int64)
        name = np.asarray(name_id, dtype=np.int32)
        kinds = np.full(len(ts), -1, dtype=np.int8) if kind is None else np.asarray(kind, dtype=np.int8)
        n = len(ts)
        if not (len(dur) == len(lane) == len(name) == len(kinds) == n):
            raise ValueError("ts_ns, dur_ns, lane_id, name_id and kind must have the same length")
        if n and dur.min() < 0:
            raise ValueError("event durations must be >= 0")
        if n and (name.min() < 0 or name.max() >= len(names)):
            raise ValueError("name_id out of range of names")
        self.names = names
        self.counter_names = counter_names

        base = event_order(lane, ts, dur)
        # In the store's order already (the usual case): the columns as they are, not copies.
        lane_s, ts_s, dur_s = (lane, ts, dur) if base is None else (lane[base], ts[base], dur[base])
        end_s = chunked_sum(ts_s, dur_s)
        self.lane_ids, lane_rank = ranks_of_sorted(lane_s)
        rows = stack_rows(lane_rank, ts_s, end_s, nesting_depth(lane_rank, ts_s, end_s))
        del end_s, lane_rank
        self.overlaps_left = rows.overlaps_left
        if base is None:
            self.depth = scratch.concatenate([rows.depth], np.int64)
        else:
            self.depth = scratch.empty(n, np.int64)
            self.depth[base] = rows.depth

        # The index's own arrays, file-backed when large (``scratch``): gathered in chunks.
        order = rows.order
        self._event_id = scratch.concatenate([order], np.int64) if base is None else scratch.take(base, order)
        self._ts = scratch.take(ts_s, order)
        self._dur = scratch.take(dur_s, order)
        del ts_s, dur_s, order
        self._name = scratch.take(name, self._event_id)
        self._kind = scratch.take(kinds, self._event_id)
        self._row_lane = rows.row_lane
        self._row_depth = rows.row_depth
        self._row_start = rows.row_start
        self._row_stop = np.append(rows.row_start[1:], n).astype(np.int64)

        t_min, t_end = (chunked_extent(ts)[0], max_end(ts, dur)) if n else (0, 0)
        self.counters = None
        if counters is not None:
            self.counters = CounterIndex(*counters, t_end=t_end)
            if len(self.counters):
                t_min = min(t_min, self.counters.t_min) if n else self.counters.t_min
                t_end = max(t_end, self.counters.t_end)
        self.t_min, self.t_end = t_min, t_end
        # +2: local times are clipped to [0, span - 1], and a window may end one past t_end.
        self._span = t_end - t_min + 2
        if n:  # every band key's check (and message), on the largest row's
            band_keys(np.array([len(self._row_start) - 1]), np.array([t_min], np.int64), t_min, self._span)
        self._key = scratch.empty(n, np.int64)
        # Running max of end keys: equal to the end keys in rows that do not overlap, and still
        # sorted (so searchable) in the rare rows stacking could not clean up.
        self._end_max = scratch.empty(n, np.int64)
        self._busy_prefix = scratch.empty(n + 1, np.int64)
        self._busy_prefix[0] = 0
        gaps = scratch.empty(n, np.int64)
        end_max = busy = 0
        for start in range(0, n, scratch.CHUNK):  # in chunks, each carrying on the last one's max/sum
            part = slice(start, start + scratch.CHUNK)
            at = np.arange(start, min(n, start + scratch.CHUNK), dtype=np.int64)
            row_of = np.searchsorted(self._row_start, at, side="right") - 1
            key = self._key[part] = row_of * np.int64(self._span) + (self._ts[part] - np.int64(t_min))
            ends = np.maximum.accumulate(key + self._dur[part])
            np.maximum(ends, end_max, out=ends)
            self._end_max[part], end_max = ends, int(ends[-1])
            sums = np.cumsum(self._dur[part]) + busy
            self._busy_prefix[start + 1 : start + 1 + len(at)], busy = sums, int(sums[-1])
        for start in range(0, n, scratch.CHUNK):
            stop = min(n - 1, start + scratch.CHUNK)
            gaps[start:stop] = np.maximum(self._key[start + 1 : stop + 1] - self._end_max[start:stop], 0)
        if n:
            gaps[n - 1] = 0
            gaps[self._row_stop[:-1] - 1] = 0
        self._longest = RangeArgMax(self._dur)
        self._gaps = RangeAtLeast(gaps)
        return self

    @classmethod
    def from_store(
        cls,
        store: EventStore,
        extra_counters: Sequence[tuple[str, npt.ArrayLike, npt.ArrayLike]] = (),
    ) -> TimelineIndex:
        """Index an ``EventStore``: its events, and its counters numbered in name order, then
        ``extra_counters`` (``(name, ts_ns, value)`` each, e.g. derived utilisation tracks).

        Lane ids are the store's ``lane_id`` (rows of ``store.lanes``); event ids are store rows.
        """
        names = store.counter_column("name")
        if np.all(names[1:] >= names[:-1]):  # the store's order: one run per counter
            counter_names, counter_id = rank_sorted(names)
        else:
            counter_names, counter_id = np.unique(names, return_inverse=True)
        first = len(counter_names)
        ids = [counter_id] + [
            np.full(len(np.asarray(ts)), first + i, np.int64) for i, (_, ts, _) in enumerate(extra_counters)
        ]
        return cls.build(
            store.col("ts_ns"),
            store.col("dur_ns"),
            store.col("lane_id"),
            store.col("name_id"),
            store.name_list,
            store.col("kind"),
            counters=(
                np.concatenate(ids),
                np.concatenate([store.counter_column("ts_ns"), *(np.asarray(c[1]) for c in extra_counters)]),
                np.concatenate([store.counter_column("value"), *(np.asarray(c[2]) for c in extra_counters)]),
            ),
            counter_names=[str(name) for name in counter_names] + [c[0] for c in extra_counters],
        )

    def __len__(self) -> int:
        return len(self._ts)

    @property
    def nbytes(self) -> int:
        """Memory held by the index's arrays (what keeping one cached costs)."""
        parts: list[object] = [self, self._longest, self._gaps]
        if self.counters is not None:
            parts += self.counters.parts()
        return held_bytes(*parts)

    def lane_depth(self, lane_id: int) -> int:
        """Number of rows (flame-chart levels) of a lane; 0 for a lane without events."""
        rank = np.searchsorted(self.lane_ids, lane_id)
        if rank >= len(self.lane_ids) or self.lane_ids[rank] != lane_id:
            return 0
        return int(self._row_depth[self._row_lane == rank].max()) + 1

    def window(
        self,
        t0_ns: int,
        t1_ns: int,
        width_px: int,
        lanes: Sequence[int] | None = None,
        min_px: float = 1.0,
        *,
        counters: Sequence[int] | None = None,
        max_items_per_px: float = 4.0,
        origin_ns: int | None = None,
    ) -> Window:
        """What a ``width_px``-wide screen shows of ``[t0_ns, t1_ns)``; see the module docstring.

        ``lanes``/``counters``: ids to answer for (default: all), in the order given; an unknown id
        gets an empty answer. ``origin_ns`` (default ``t_min``) is what ``Window.to_dict`` makes
        its times relative to. Raises ValueError for an empty window, a width outside
        ``1..MAX_WIDTH_PX``, ``min_px < 1`` or ``max_items_per_px < 4``.
        """
        t0, t1, width = int(t0_ns), int(t1_ns), int(width_px)
        if t1 <= t0:
            raise ValueError("the window must end after it starts (t1_ns > t0_ns)")
        if not 1 <= width <= MAX_WIDTH_PX:
            raise ValueError(f"width_px must be between 1 and {MAX_WIDTH_PX}")
        if not (math.isfinite(min_px) and min_px >= 1.0):
            raise ValueError("min_px must be at least 1 (events narrower than a pixel are merged)")
        if not max_items_per_px >= 4.0:
            raise ValueError("max_items_per_px must be at least 4")
        lane_list = self.lane_ids if lanes is None else np.asarray(list(lanes), dtype=np.int64)
        edges = column_edges(t0, t1, width)
        wide_ns = max(1, math.ceil(min_px * (t1 - t0) / width))
        cap = int(max_items_per_px * width) + 8

        lane_windows = self._lanes(lane_list, t0, t1, (t1 - t0) / width, wide_ns, cap)
        tracks: list[CounterTrack] = []
        if self.counters is not None:
            tracks = self.counters.downsample(edges, counters)
        return Window(
            t0_ns=t0,
            t1_ns=t1,
            width_px=width,
            min_px=float(min_px),
            lanes=lane_windows,
            counters=tracks,
            names=self.names,
            counter_names=self.counter_names,
            origin_ns=self.t_min if origin_ns is None else int(origin_ns),
        )

    # -- the query ----------------------------------------------------------------------------------

    def _local(self, row: IntArray, t: int | IntArray) -> IntArray:
        local = np.clip(np.asarray(t, dtype=np.int64) - self.t_min, 0, self._span - 1)
        return row * self._span + local

    def _lanes(
        self, lane_list: IntArray, t0: int, t1: int, ns_per_px: float, wide_ns: int, cap: int
    ) -> list[LaneWindow]:
        rank = np.searchsorted(self.lane_ids, lane_list)
        known = rank < len(self.lane_ids)
        known[known] = self.lane_ids[rank[known]] == lane_list[known]
        rows = np.flatnonzero(np.isin(self._row_lane, rank[known]))

        # 1. Per row, the index range of the events overlapping [t0, t1).
        ends_after_t0 = np.searchsorted(self._end_max, self._local(rows, t0), side="right")
        starts_from_t0 = np.searchsorted(self._key, self._local(rows, t0), side="left")
        lo = np.maximum(np.minimum(ends_after_t0, starts_from_t0), self._row_start[rows])
        hi = np.minimum(np.searchsorted(self._key, self._local(rows, t1), side="left"), self._row_stop[rows])
        hi = np.maximum(hi, lo)

        # 2. Wide events, as they are.
        wide = self._longest.at_least(lo, hi, wide_ns)

        # 3. Narrow events, cut around the wide events and at gaps of a pixel or more.
        gap_cut = self._gaps.at_least(lo, hi - 1, ns_per_px) + 1
        cuts = np.sort(np.concatenate([lo, hi, wide, wide + 1, gap_cut]))
        bounds = cuts[np.concatenate([[True], cuts[1:] != cuts[:-1]])] if len(cuts) else cuts
        p, q = bounds[:-1], bounds[1:]
        seg_row = np.searchsorted(lo, p, side="right") - 1
        keep = (seg_row >= 0) & (p < hi[np.maximum(seg_row, 0)])
        keep &= ~_isin_sorted(p, wide)
        p, q, seg_row = p[keep], q[keep], seg_row[keep]
        blocks = self._blocks(rows[seg_row], p, q, t0, t1)
        wide_row = np.searchsorted(lo, wide, side="right") - 1

        # Cap each lane: keep rows top-down while the lane's running item count fits.
        items = np.bincount(seg_row, minlength=len(rows)) + np.bincount(wide_row, minlength=len(rows))
        row_lane = self._row_lane[rows]
        lane_first = np.searchsorted(row_lane, row_lane, side="left")
        running = np.cumsum(items)
        before_lane = np.where(lane_first > 0, running[np.maximum(lane_first - 1, 0)], 0)
        row_kept = (running - before_lane) <= cap

        events = self._events(wide, rows[wide_row])
        out = []
        for lane_id, r, ok in zip(lane_list.tolist(), rank.tolist(), known.tolist(), strict=True):
            if not ok:
                out.append(_empty_lane(lane_id))
                continue
            # Items are sorted by row and a lane's rows are contiguous: slice, then drop cut rows.
            first, last = np.searchsorted(row_lane, [r, r + 1])
            e0, e1 = np.searchsorted(wide_row, [first, last])
            b0, b1 = np.searchsorted(seg_row, [first, last])
            dropped = np.flatnonzero(~row_kept[first:last])
            if len(dropped):
                depth_shown = int(self._row_depth[rows[first + dropped[0]]])
            else:
                depth_shown = int(self._row_depth[rows[first:last]].max()) + 1
            out.append(
                LaneWindow(
                    lane_id=lane_id,
                    events=events.take(np.arange(e0, e1)[row_kept[wide_row[e0:e1]]]),
                    blocks=blocks.take(np.arange(b0, b1)[row_kept[seg_row[b0:b1]]]),
                    depth_shown=depth_shown,
                    truncated=bool(len(dropped)),
                )
            )
        return out

    def _blocks(self, row: IntArray, p: IntArray, q: IntArray, t0: int, t1: int) -> Blocks:
        longest = self._longest.argmax(p, q)
        ts, dur = self._ts, self._dur
        first_start = ts[p]
        last_end = self._end_max[q - 1] - row * self._span + self.t_min
        # Only a row's first event in the window can start before t0, and its last end after t1.
        head_cut = np.clip(t0 - first_start, 0, dur[p])
        tail_cut = np.clip(ts[q - 1] + dur[q - 1] - t1, 0, dur[q - 1])
        busy = self._busy_prefix[q] - self._busy_prefix[p] - head_cut - tail_cut
        return Blocks(
            start=np.maximum(first_start, t0),
            end=np.minimum(last_end, t1),
            depth=self._row_depth[row],
            count=q - p,
            busy_ns=busy,
            name_id=self._name[longest].astype(np.int64),
            kind=self._kind[longest].astype(np.int64),
            event_id=self._event_id[longest],
        )

    def _events(self, idx: IntArray, row: IntArray) -> Events:
        return Events(
            start=self._ts[idx],
            dur=self._dur[idx],
            depth=self._row_depth[row],
            name_id=self._name[idx].astype(np.int64),
            kind=self._kind[idx].astype(np.int64),
            event_id=self._event_id[idx],
        )


def _isin_sorted(values: IntArray, sorted_set: IntArray) -> npt.NDArray[np.bool_]:
    """``np.isin`` for a sorted ``sorted_set``, by binary search."""
    if len(sorted_set) == 0:
        return np.zeros(len(values), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[pos] == values


def _empty_lane(lane_id: int) -> LaneWindow:
    return LaneWindow(
        lane_id=lane_id,
        events=Events.empty(),
        blocks=Blocks.empty(),
        depth_shown=0,
        truncated=False,
    )
