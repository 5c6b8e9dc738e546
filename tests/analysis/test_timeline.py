"""Timeline level of detail: exact answers on hand-made traces, invariants on generated ones."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profilerhub_analysis.build import load_trace
from profilerhub_analysis.timeline import TimelineIndex, Window
from profilerhub_analysis.timeline._ranges import RangeArgMax, concat_ranges

NAMES = [f"op{i}" for i in range(8)]


def build(events: list[tuple[int, int, int, int]], **kwargs: object) -> TimelineIndex:
    """Index ``(lane, ts, dur, name)`` tuples, in the order given."""
    lane, ts, dur, name = (np.array(col, dtype=np.int64) for col in zip(*events, strict=True))
    return TimelineIndex.build(ts, dur, lane, name, NAMES, **kwargs)  # type: ignore[arg-type]


def as_rows(win: Window, lane_id: int) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """(events, blocks) of one lane as tuples, for readable comparisons."""
    lane = win.lane(lane_id)
    ev, bl = lane.events, lane.blocks
    events = list(
        zip(ev.start.tolist(), ev.dur.tolist(), ev.depth.tolist(), ev.name_id.tolist(), strict=True)
    )
    blocks = list(
        zip(
            bl.start.tolist(),
            bl.end.tolist(),
            bl.depth.tolist(),
            bl.count.tolist(),
            bl.busy_ns.tolist(),
            bl.name_id.tolist(),
            strict=True,
        )
    )
    return events, blocks


# -- hand-made traces ---------------------------------------------------------------------------


def test_events_at_least_a_pixel_wide_come_back_as_they_are() -> None:
    index = build([(0, 0, 10, 1), (0, 20, 1, 2), (0, 30, 40, 3)])
    events, blocks = as_rows(index.window(0, 100, 100), 0)  # 1 ns per pixel
    assert events == [(0, 10, 0, 1), (20, 1, 0, 2), (30, 40, 0, 3)]
    assert blocks == []


def test_narrow_events_in_one_pixel_column_merge_into_one_block() -> None:
    index = build([(0, 0, 2, 1), (0, 3, 2, 2), (0, 6, 3, 1)])
    events, blocks = as_rows(index.window(0, 100, 10), 0)  # 10 ns per pixel
    assert events == []
    # start, end, depth, count, busy, name of the longest event
    assert blocks == [(0, 9, 0, 3, 7, 1)]


def test_events_closer_than_a_pixel_merge_across_pixel_edges_whatever_their_names() -> None:
    # 10 ns per pixel: gaps of 0 and 1 ns join (across the pixel edge at 10); a gap of exactly one
    # pixel (14 -> 24) stays visible.
    index = build([(0, 8, 1, 1), (0, 9, 1, 1), (0, 10, 1, 2), (0, 12, 2, 2), (0, 24, 1, 3)])
    _, blocks = as_rows(index.window(0, 100, 10), 0)
    # start, end, depth, count, busy, name of the longest event
    assert blocks == [(8, 14, 0, 4, 5, 2), (24, 25, 0, 1, 1, 3)]


def test_a_wide_event_splits_the_narrow_ones_around_it() -> None:
    index = build([(0, 0, 2, 1), (0, 3, 2, 1), (0, 6, 30, 2), (0, 37, 2, 1), (0, 40, 1, 1)])
    events, blocks = as_rows(index.window(0, 100, 10), 0)
    assert events == [(6, 30, 0, 2)]
    assert blocks == [(0, 5, 0, 2, 4, 1), (37, 41, 0, 2, 3, 1)]


def test_a_long_run_without_a_visible_gap_is_one_block_labelled_by_its_longest_event() -> None:
    index = build([(0, 8, 1, 1), (0, 10, 1, 1), (0, 15, 1, 1), (0, 21, 2, 1), (0, 24, 2, 1)])
    win = index.window(0, 100, 10)
    _, blocks = as_rows(win, 0)
    assert blocks == [(8, 26, 0, 5, 7, 1)]
    # The block points at its longest event, the first of the two longest.
    assert win.lane(0).blocks.event_id.tolist() == [3]


def test_gap_wider_than_a_pixel_stays_visible_between_blocks() -> None:
    index = build([(0, 0, 1, 1), (0, 2, 1, 1), (0, 25, 1, 1), (0, 26, 2, 1)])
    _, blocks = as_rows(index.window(0, 100, 10), 0)
    assert blocks == [(0, 3, 0, 2, 2, 1), (25, 28, 0, 2, 3, 1)]


def test_events_straddling_the_window_edges_are_clipped_in_blocks_and_whole_as_events() -> None:
    index = build([(0, -50, 250, 1), (1, -5, 8, 2), (1, 40, 5, 3), (1, 97, 9, 4)])
    win = index.window(0, 100, 10)  # 10 ns per pixel
    events, _ = as_rows(win, 0)
    assert events == [(-50, 250, 0, 1)]
    _, blocks = as_rows(win, 1)
    assert blocks == [(0, 3, 0, 1, 3, 2), (40, 45, 0, 1, 5, 3), (97, 100, 0, 1, 3, 4)]


def test_nested_events_get_depths_and_merge_per_row() -> None:
    index = build(
        [
            (0, 0, 100, 0),  # parent
            (0, 0, 40, 1),  # child starting with its parent
            (0, 10, 5, 2),  # grandchild
            (0, 12, 1, 3),  # great-grandchild
            (0, 50, 30, 1),  # second child
            (0, 55, 0, 5),  # zero-length marker inside it
        ]
    )
    assert index.depth.tolist() == [0, 1, 2, 3, 1, 2]
    win = index.window(0, 100, 100)  # 1 ns per pixel
    events, blocks = as_rows(win, 0)
    assert events == [(0, 100, 0, 0), (0, 40, 1, 1), (50, 30, 1, 1), (10, 5, 2, 2), (12, 1, 3, 3)]
    assert blocks == [(55, 55, 2, 1, 0, 5)]
    assert win.lane(0).depth_shown == 4


def test_parent_listed_after_its_child_at_the_same_start_still_nests_above_it() -> None:
    index = build([(0, 10, 5, 1), (0, 10, 20, 0), (0, 40, 1, 2)])
    assert index.depth.tolist() == [1, 0, 0]
    events, _ = as_rows(index.window(0, 100, 100), 0)
    assert events == [(10, 20, 0, 0), (40, 1, 0, 2), (10, 5, 1, 1)]
    assert index.window(0, 100, 100).lane(0).events.event_id.tolist() == [1, 2, 0]


def test_events_overlapping_without_nesting_are_stacked_on_separate_rows() -> None:
    # b starts inside a and ends after it; c starts inside b after a ended.
    index = build([(0, 0, 10, 0), (0, 5, 10, 1), (0, 12, 10, 2)])
    depth = index.depth.tolist()
    assert depth[0] == 0 and depth[1] == 1 and depth[2] not in (depth[1],)
    assert index.overlaps_left == 0


def test_zero_length_events_count_in_blocks_and_the_window_is_half_open() -> None:
    index = build([(0, 0, 0, 1), (0, 50, 0, 1), (0, 100, 0, 1)])
    _, blocks = as_rows(index.window(0, 100, 10), 0)
    assert blocks == [(0, 0, 0, 1, 0, 1), (50, 50, 0, 1, 0, 1)]


def test_lanes_without_events_in_the_window_or_unknown_come_back_empty() -> None:
    index = build([(0, 0, 10, 1), (3, 500, 10, 2)])
    win = index.window(0, 100, 10, lanes=[3, 0, 99])
    assert [lane.lane_id for lane in win.lanes] == [3, 0, 99]
    assert win.lane(3).items == 0 and win.lane(99).items == 0
    assert win.lane(0).items == 1


def test_a_window_outside_the_trace_is_empty() -> None:
    index = build([(0, 1000, 10, 1)], counters=([0, 0], [1000, 1005], [1.0, 2.0]))
    for t0, t1 in [(0, 999), (2000, 3000), (-(10**12), -5)]:
        win = index.window(t0, t1, 50)
        assert win.lane(0).items == 0
        assert len(win.counters[0].column) == 0


def test_a_trace_without_events_still_answers_for_lanes_and_counters() -> None:
    index = TimelineIndex.build([], [], [], [], NAMES, counters=([0, 0], [5, 9], [1.0, 2.0]))
    win = index.window(0, 10, 5, lanes=[1])
    assert win.lane(1).items == 0
    track = win.counters[0]
    assert track.column.tolist() == [2, 4] and track.max.tolist() == [1.0, 2.0]
    assert track.mean.tolist() == [1.0, 1.5]


def test_unsorted_input_gives_the_same_answer_as_sorted_input() -> None:
    rng = np.random.default_rng(1)
    events = [
        (int(rng.integers(0, 3)), int(rng.integers(0, 1000)), int(rng.integers(0, 30)), 1) for _ in range(300)
    ]
    a = build(sorted(events, key=lambda e: (e[0], e[1])))
    b = build(events)
    wa, wb = a.window(0, 1000, 37), b.window(0, 1000, 37)
    for lane in (0, 1, 2):
        assert as_rows(wa, lane) == as_rows(wb, lane)
    picked = wb.lane(0).events.event_id
    assert [events[i][1] for i in picked.tolist()] == wb.lane(0).events.start.tolist()


def test_deep_lanes_are_cut_at_the_item_cap_from_the_bottom_and_other_lanes_are_whole() -> None:
    # Lanes 0 and 2: 200 nested levels, far more rows than 4 items per pixel allow; lane 1: one row.
    deep = [(lane, level, 1000 - 2 * level, level % 8) for lane in (0, 2) for level in range(200)]
    shallow = [(1, 100 * k, 50, 1) for k in range(10)]
    index = build(deep + shallow)
    win = index.window(0, 1000, 10, max_items_per_px=4)
    for lane_id in (0, 2):
        lane = win.lane(lane_id)
        assert lane.truncated
        assert lane.items <= 4 * 10 + 8
        assert lane.depth_shown == int(lane.events.depth.max()) + 1
    assert not win.lane(1).truncated and int(win.lane(1).blocks.count.sum()) == 10
    assert index.window(0, 1000, 1000).lane(0).truncated is False


@pytest.mark.parametrize(
    ("t0", "t1", "width", "min_px", "message"),
    [
        (10, 10, 100, 1.0, "end after it starts"),
        (0, 10, 0, 1.0, "width_px"),
        (0, 10, 100_000, 1.0, "width_px"),
        (0, 10, 100, 0.5, "min_px"),
        (0, 10, 100, float("nan"), "min_px"),
    ],
)
def test_bad_window_arguments_are_refused_with_a_message(
    t0: int, t1: int, width: int, min_px: float, message: str
) -> None:
    index = build([(0, 0, 10, 1)])
    with pytest.raises(ValueError, match=message):
        index.window(t0, t1, width, min_px=min_px)


def test_bad_event_arrays_are_refused_with_a_message() -> None:
    with pytest.raises(ValueError, match="durations"):
        build([(0, 0, -1, 1)])
    with pytest.raises(ValueError, match="name_id"):
        build([(0, 0, 1, 42)])
    with pytest.raises(ValueError, match="same length"):
        TimelineIndex.build([0, 1], [1], [0, 0], [0, 0], NAMES)


def test_to_dict_is_json_with_times_relative_to_the_trace_start_and_used_names_once() -> None:
    epoch = 1_790_857_026_000_000_000  # above 2**53: a browser could not hold it exactly
    index = build([(0, epoch, 10, 1), (0, epoch + 50, 2, 2)], counters=([7], [epoch], [5.0]))
    win = index.window(epoch, epoch + 100, 10)
    data = json.loads(json.dumps(win.to_dict()))
    assert data["origin_ns"] == epoch and data["t0"] == 0 and data["t1"] == 100
    assert data["names"] == {"1": "op1", "2": "op2"}
    lane = data["lanes"][0]
    assert lane["events"]["start"] == [0] and lane["events"]["dur"] == [10]
    assert lane["blocks"]["start"] == [50] and lane["blocks"]["end"] == [52]
    assert data["counters"][0]["counter_id"] == 7
    # The counter holds its value until the trace ends (at 52 ns): columns 0 to 5.
    assert data["counters"][0]["column"] == [0] and data["counters"][0]["span"] == [6]


# -- counters -----------------------------------------------------------------------------------


def test_counter_downsampling_keeps_a_one_sample_spike_and_a_dip() -> None:
    ts = np.arange(100_000, dtype=np.int64) * 10
    value = np.full(len(ts), 5.0)
    value[31_337] = 1e9
    value[77_777] = -3.0
    index = build([(0, 0, 1, 1)], counters=(np.zeros(len(ts), dtype=np.int64), ts, value))
    track = index.window(0, int(ts[-1]) + 10, 100).counters[0]
    assert track.max.max() == 1e9 and track.min.min() == -3.0
    spike_col = track.column[track.max == 1e9]
    assert spike_col.tolist() == [31]


def test_counter_is_a_step_function_carried_into_empty_columns_and_after_the_last_sample() -> None:
    # Samples at 10 (value 2) and 30 (value 6); the trace ends at 60.
    index = build([(0, 0, 60, 1)], counters=([0, 0], [10, 30], [2.0, 6.0]))
    track = index.window(0, 60, 6).counters[0]  # columns of 10 ns
    assert track.column.tolist() == [1, 3]
    assert track.span.tolist() == [2, 3]
    assert track.min.tolist() == [2.0, 6.0] and track.max.tolist() == [2.0, 6.0]
    # Column 0 (before the first sample) has no value; one column straddling a change:
    wide = index.window(20, 40, 1).counters[0]
    assert (wide.min[0], wide.max[0], wide.mean[0]) == (2.0, 6.0, 4.0)


def test_counter_mean_is_weighted_by_time() -> None:
    index = build([(0, 0, 100, 1)], counters=([0, 0, 0], [0, 10, 20], [1.0, 100.0, 1.0]))
    track = index.window(0, 100, 1).counters[0]
    assert track.mean[0] == pytest.approx((10 * 1 + 10 * 100 + 80 * 1) / 100)


# -- generated traces: invariants ---------------------------------------------------------------


@st.composite
def traces(draw: st.DrawFn) -> list[tuple[int, int, int, int]]:
    """Lanes of nested call trees, plus a few events that overlap without nesting."""
    events = []
    for lane in range(draw(st.integers(1, 3))):
        stack = [(0, draw(st.integers(1, 5000)))]  # (start, end) of open parents
        t = 0
        for _ in range(draw(st.integers(0, 60))):
            t += draw(st.integers(0, 300))
            while stack and stack[-1][1] <= t:
                stack.pop()
            room = stack[-1][1] - t if stack else 3000
            dur = draw(st.integers(0, max(0, room)))
            events.append((lane, t, dur, draw(st.integers(0, 7))))
            stack.append((t, t + dur))
        for _ in range(draw(st.integers(0, 3))):
            events.append((lane, draw(st.integers(0, 6000)), draw(st.integers(0, 800)), 0))
    return events


def overlap_ns(ts: np.ndarray, dur: np.ndarray, t0: int, t1: int) -> np.ndarray:
    return np.clip(np.minimum(ts + dur, t1) - np.maximum(ts, t0), 0, None)


def check_window(
    index: TimelineIndex, win: Window, lane_of: np.ndarray, ts: np.ndarray, dur: np.ndarray
) -> None:
    """Every invariant a window must hold, checked against the raw events it was built from."""
    t0, t1, width, min_px = win.t0_ns, win.t1_ns, win.width_px, win.min_px
    for lane in win.lanes:
        ev, bl = lane.events, lane.blocks
        assert lane.items <= 4 * width + 8
        if lane.truncated:
            continue
        mine = lane_of == lane.lane_id
        inside = mine & (ts < t1) & ((ts + dur > t0) | (ts >= t0))
        # Every event in the window is shown once: as itself or inside one block.
        assert len(ev) + int(bl.count.sum()) == int(inside.sum())
        # Busy time inside the window is exact (rows never overlap, so the sum is the union).
        shown = int(overlap_ns(ev.start, ev.dur, t0, t1).sum()) + int(bl.busy_ns.sum())
        assert shown == int(overlap_ns(ts[inside], dur[inside], t0, t1).sum())
        # Events shown as they are reach min_px; blocks lie in the window and hold their busy time.
        assert np.all(ev.dur >= min_px * win.ns_per_px)
        assert np.all((bl.start >= t0) & (bl.end <= t1) & (bl.start <= bl.end))
        assert np.all(bl.busy_ns <= bl.end - bl.start)
        # A row yields at most about two items per pixel, whatever its events.
        per_row = np.bincount(np.concatenate([ev.depth, bl.depth]).astype(np.int64))
        assert per_row.max(initial=0) <= 2 * width + 5
        # A block's label is one of its own events: in the lane, on its row, inside its extent.
        rep = bl.event_id
        assert np.all(lane_of[rep] == lane.lane_id) and np.all(index.depth[rep] == bl.depth)
        assert np.all((ts[rep] <= np.maximum(bl.end, bl.start)) & (ts[rep] + dur[rep] >= bl.start))
        # Nothing drawn on one row overlaps anything else on that row.
        starts = np.concatenate([np.maximum(ev.start, t0), bl.start])
        ends = np.concatenate([np.minimum(ev.start + ev.dur, t1), bl.end])
        depth = np.concatenate([ev.depth, bl.depth])
        order = np.lexsort((starts, depth))
        same_row = depth[order][1:] == depth[order][:-1]
        assert np.all(~same_row | (ends[order][:-1] <= starts[order][1:]))
        # A block never hides a gap of a pixel or more between two events of its row.
        row_depth = index.depth[inside]
        row_ts, row_end = ts[inside], (ts + dur)[inside]
        for d in np.unique(bl.depth).tolist():
            sel = row_depth == d
            o = np.argsort(row_ts[sel])
            gap_from, gap_to = row_end[sel][o][:-1], row_ts[sel][o][1:]
            big = (gap_to - gap_from) >= win.ns_per_px
            at_d = bl.depth == d
            for a, b in zip(gap_from[big].tolist(), gap_to[big].tolist(), strict=True):
                assert not np.any((bl.start[at_d] < a) & (bl.end[at_d] > b))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    trace=traces(),
    t0=st.integers(-500, 6000),
    length=st.integers(1, 8000),
    width=st.integers(1, 300),
    min_px=st.sampled_from([1.0, 1.5, 4.0]),
)
def test_window_conserves_count_and_busy_time_and_stays_bounded(
    trace: list[tuple[int, int, int, int]], t0: int, length: int, width: int, min_px: float
) -> None:
    if not trace:
        trace = [(0, 0, 1, 0)]
    index = build(trace)
    win = index.window(t0, t0 + length, width, min_px=min_px)
    lane_of, ts, dur = (np.array([e[k] for e in trace]) for k in range(3))
    check_window(index, win, lane_of, ts, dur)


@pytest.mark.parametrize(
    "trace",
    [
        "torch-cpu/mlp_cpu_10steps.pt.trace.json",
        "torch-cpu/mlp_cpu_10steps_stack.pt.trace.json.gz",  # python_function events, badly nested
        "hta/tests/data/negative_queue_length_values_check/rank0.json.gz",  # CPU + GPU streams
    ],
)
def test_real_traces_show_every_event_once_at_every_zoom(shared_dir: Path, trace: str) -> None:
    store = load_trace(shared_dir / "traces" / trace)
    index = TimelineIndex.from_store(store)
    assert index.overlaps_left == 0
    lane_of, ts, dur = store.col("lane_id"), store.col("ts_ns"), store.col("dur_ns")
    span = index.t_end - index.t_min
    rng = np.random.default_rng(7)
    for length in (span + 1, span // 10, span // 1000, 100_000, 1_000):
        t0 = index.t_min + int(rng.integers(0, max(1, span - length)))
        win = index.window(t0, t0 + length, 1200)
        check_window(index, win, lane_of, ts, dur)
        for lane in win.lanes:
            # Event ids are store rows: the names shown are the store's.
            assert np.array_equal(store.col("name_id")[lane.events.event_id], lane.events.name_id)
    full = index.window(index.t_min, index.t_end + 1, 1200)
    assert sum(lane.items for lane in full.lanes) > 0
    assert [t.counter_id for t in full.counters] == list(range(len(index.counter_names or [])))


@settings(max_examples=60, deadline=None)
@given(trace=traces())
def test_depth_stacks_every_lane_so_no_two_events_of_a_row_overlap(
    trace: list[tuple[int, int, int, int]],
) -> None:
    if not trace:
        return
    index = build(trace)
    lane = np.array([e[0] for e in trace])
    ts = np.array([e[1] for e in trace])
    end = ts + np.array([e[2] for e in trace])
    order = np.lexsort((ts, index.depth, lane))
    same_row = (lane[order][1:] == lane[order][:-1]) & (index.depth[order][1:] == index.depth[order][:-1])
    assert np.all(~same_row | (end[order][:-1] <= ts[order][1:]))
    assert index.overlaps_left == 0


@settings(max_examples=80, deadline=None)
@given(
    samples=st.lists(st.tuples(st.integers(0, 1000), st.floats(-1e6, 1e6)), min_size=1, max_size=80),
    t0=st.integers(-100, 1100),
    length=st.integers(1, 1500),
    width=st.integers(1, 60),
)
def test_counter_columns_hold_the_exact_min_max_and_mean_of_the_step_function(
    samples: list[tuple[int, float]], t0: int, length: int, width: int
) -> None:
    samples = sorted(dict(samples).items())  # one value per timestamp
    ts = np.array([s[0] for s in samples], dtype=np.int64)
    val = np.array([s[1] for s in samples])
    index = build([(0, 0, 1000, 1)], counters=(np.zeros(len(ts), dtype=np.int64), ts, val))
    t1 = t0 + length
    track = index.window(t0, t1, width).counters[0]
    edges = index.window(t0, t1, width).ns_per_px
    got = {}
    for col, span, lo, hi, mean in zip(
        *(a.tolist() for a in (track.column, track.span, track.min, track.max, track.mean)), strict=True
    ):
        for c in range(col, col + span):
            got[c] = (lo, hi, mean)
    end = index.t_end + 1
    for c in range(width):
        a = t0 + -(-c * length // width)
        b = t0 + -(-(c + 1) * length // width)
        # The function's pieces inside [a, b) within [first sample, trace end].
        pieces = []
        for i in range(len(ts)):
            p0 = max(a, int(ts[i]))
            p1 = min(b, int(ts[i + 1]) if i + 1 < len(ts) else end)
            if p1 > p0:
                pieces.append((p1 - p0, float(val[i])))
        if a == b and a < end:
            # A column narrower than a nanosecond shows the value in force just before its edge.
            before = np.flatnonzero(ts < a)
            pieces = [(1, float(val[before[-1]]))] if len(before) else []
        if not pieces:
            assert c not in got
            continue
        lo, hi, mean = got[c]
        assert lo == min(v for _, v in pieces) and hi == max(v for _, v in pieces)
        expect = sum(w * v for w, v in pieces) / sum(w for w, _ in pieces)
        assert mean == pytest.approx(expect, rel=1e-9, abs=1e-6)
    assert edges == length / width


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(st.integers(-5, 5), min_size=1, max_size=400),
    data=st.data(),
)
def test_range_argmax_finds_the_leftmost_largest_value(values: list[int], data: st.DataObject) -> None:
    arr = np.array(values, dtype=np.int64)
    rmq = RangeArgMax(arr)
    ranges = data.draw(
        st.lists(st.tuples(st.integers(0, len(arr) - 1), st.integers(1, len(arr))), min_size=1, max_size=20)
    )
    lo = np.array([a for a, _ in ranges])
    hi = np.minimum(lo + np.array([n for _, n in ranges]), len(arr))
    expected = [a + int(np.argmax(arr[a:b])) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]
    assert rmq.argmax(lo, hi).tolist() == expected
    cut = sorted({0, len(arr), *data.draw(st.lists(st.integers(0, len(arr)), max_size=6))})
    lo2, hi2 = np.array(cut[:-1:2]), np.array(cut[1::2])
    found = rmq.at_least(lo2, hi2, 3).tolist()
    assert found == [
        i for a, b in zip(lo2.tolist(), hi2.tolist(), strict=True) for i in range(a, b) if arr[i] >= 3
    ]


def test_concat_ranges_matches_a_loop_of_aranges() -> None:
    assert concat_ranges([0, 5, 3, 9], [2, 5, 6, 8]).tolist() == [0, 1, 3, 4, 5]
