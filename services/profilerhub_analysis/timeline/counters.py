"""Counter tracks (memory, utilisation, ...) downsampled to pixel columns.

A counter is a step function, as Chrome's trace viewer and Perfetto draw it: each sample's value
holds until the next sample, and the last one until the end of the trace. Per pixel column the
track reports the minimum and maximum of the values the function takes inside the column (the
value carried in from before the column included), so a one-sample spike survives any zoom, and
the time-weighted mean. Columns before a counter's first sample or after the trace end have no
value and are left out; neighbouring columns with the same three values are sent once, as a run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._layout import band_keys, event_order, rank_sorted
from ._ranges import RangeArgMax

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class CounterTrack:
    """One counter over one window: values per pixel column that has one."""

    counter_id: int
    column: npt.NDArray[np.int32]  # first pixel column of a run (0 = left edge of the window)
    span: npt.NDArray[np.int32]  # columns in the run, all with these same values
    min: FloatArray
    max: FloatArray
    mean: FloatArray  # time-weighted over the part of the column where the counter has a value


class CounterIndex:
    """Samples of all counters, flat and sorted by ``(counter, ts)``, ready for column queries."""

    def __init__(self, counter_id: npt.ArrayLike, ts_ns: npt.ArrayLike, value: npt.ArrayLike, t_end: int):
        cid = np.asarray(counter_id, dtype=np.int64)
        ts = np.asarray(ts_ns, dtype=np.int64)
        val = np.asarray(value, dtype=np.float64)
        if not (len(cid) == len(ts) == len(val)):
            raise ValueError("counter_id, ts_ns and value must have the same length")
        # Samples without a usable value cannot be drawn; they are dropped, not guessed.
        finite = np.isfinite(val)
        cid, ts, val = cid[finite], ts[finite], val[finite]
        order = event_order(cid, ts, np.zeros_like(ts))
        if order is not None:
            cid, ts, val = cid[order], ts[order], val[order]
        self.ids, rank = rank_sorted(cid)
        self.ts, self.value = ts, val
        n = len(ts)
        self.row_start = np.flatnonzero(np.concatenate([[n > 0], rank[1:] != rank[:-1]])).astype(np.int64)
        self.row_stop = np.append(self.row_start[1:], n)[: len(self.row_start)].astype(np.int64)
        self.t_min = int(ts.min()) if n else 0
        self.t_end = max(int(t_end), int(ts.max()) if n else 0)
        self.span = self.t_end - self.t_min + 2
        self.key = band_keys(rank, ts, self.t_min, self.span)
        self._max = RangeArgMax(val)
        self._min = RangeArgMax(-val)
        self._area = self._step_area()

    def __len__(self) -> int:
        return len(self.ts)

    def parts(self) -> list[object]:
        """This index and the range structures it holds (for ``held_bytes``)."""
        return [self, self._max, self._min]

    def _step_area(self) -> FloatArray:
        """Per sample: integral of (value - the row's first value) from the row's first sample.

        Per row and relative to its first value, so a large counter does not drown a small one in
        rounding error.
        """
        area = np.zeros(len(self.ts), dtype=np.float64)
        for start, stop in zip(self.row_start.tolist(), self.row_stop.tolist(), strict=True):
            v = self.value[start:stop] - self.value[start]
            dt = np.diff(self.ts[start:stop]).astype(np.float64)
            area[start + 1 : stop] = np.cumsum(v[:-1] * dt)
        return area

    def downsample(self, edges: IntArray, counter_ids: npt.ArrayLike | None = None) -> list[CounterTrack]:
        """Tracks for pixel columns ``[edges[c], edges[c+1])``; all counters, or those asked for."""
        ids = self.ids if counter_ids is None else np.asarray(counter_ids, dtype=np.int64)
        width = len(edges) - 1
        rank = np.searchsorted(self.ids, ids)
        known = rank < len(self.ids)
        known[known] = self.ids[rank[known]] == ids[known]
        tracks = []
        for cid, r, ok in zip(ids.tolist(), rank.tolist(), known.tolist(), strict=True):
            if not ok:
                tracks.append(_empty_track(cid))
                continue
            tracks.append(self._track(cid, r, edges, width))
        return tracks

    def _local(self, r: int, t: IntArray) -> IntArray:
        local = np.clip(t - self.t_min, 0, self.span - 1)
        return np.int64(r) * np.int64(self.span) + local

    def _track(self, cid: int, r: int, edges: IntArray, width: int) -> CounterTrack:
        start, stop = int(self.row_start[r]), int(self.row_stop[r])
        left, right = edges[:-1], edges[1:]
        keys = self._local(r, edges)
        at_or_before = np.searchsorted(self.key, keys, side="right")  # samples with ts <= edge
        before = np.searchsorted(self.key, keys, side="left")  # samples with ts < edge
        # The sample in force at a column's left edge, then every sample before its right edge.
        # A column narrower than a nanosecond (left == right) holds the time just before its edge.
        carried = np.where(right > left, at_or_before[:-1], before[:-1]) - 1
        lo = np.maximum(carried, start)
        hi = np.minimum(before[1:], stop)
        first_ts = int(self.ts[start])
        has_value = (hi > lo) & (left <= self.t_end) & (right > first_ts)
        col = np.flatnonzero(has_value).astype(np.int32)
        lo, hi = lo[col], hi[col]
        vmax = self.value[self._max.argmax(lo, hi)]
        vmin = self.value[self._min.argmax(lo, hi)]

        # Time-weighted mean over the part of the column where the counter has a value: the
        # integral of the step function between a and b, from per-sample running integrals.
        a = np.maximum(left[col], first_ts)
        b = np.minimum(right[col], self.t_end + 1)
        j_a = np.where(left[col] >= first_ts, at_or_before[:-1][col] - 1, start)
        j_b = np.where(right[col] <= self.t_end + 1, at_or_before[1:][col] - 1, stop - 1)
        area = self._area_at(start, j_b, b) - self._area_at(start, j_a, a)
        length = (b - a).astype(np.float64)
        single = (hi - lo == 1) | (length <= 0)
        mean = np.where(single, self.value[lo], self.value[start] + area / np.where(length > 0, length, 1.0))

        # Zoomed in past the sampling rate, neighbouring columns repeat one value: send it once.
        same = (col[1:] == col[:-1] + 1) & (vmin[1:] == vmin[:-1]) & (vmax[1:] == vmax[:-1])
        same &= mean[1:] == mean[:-1]
        first = np.flatnonzero(np.concatenate([[True], ~same])) if len(col) else col
        span = np.diff(np.append(first, len(col))).astype(np.int32)
        return CounterTrack(
            counter_id=cid, column=col[first], span=span, min=vmin[first], max=vmax[first], mean=mean[first]
        )

    def _area_at(self, start: int, j: IntArray, t: IntArray) -> FloatArray:
        """Integral of (value - first value) from sample ``start`` up to time ``t``; ``j`` is the
        last sample at or before ``t``."""
        step = self.value[j] - self.value[start]
        return self._area[j] + step * (t - self.ts[j]).astype(np.float64)


def _empty_track(cid: int) -> CounterTrack:
    empty = np.zeros(0, dtype=np.float64)
    cols = np.zeros(0, dtype=np.int32)
    return CounterTrack(counter_id=cid, column=cols, span=cols, min=empty, max=empty, mean=empty)
