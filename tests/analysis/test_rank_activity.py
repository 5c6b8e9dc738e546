"""The all-ranks overview (``rank_activity``): each rank's busy share over the job's wall-clock time,
checked against figures worked out by hand from hand-made traces."""

from __future__ import annotations

import pytest

from profilerhub_analysis.rank_activity import activity, overview
from profilerhub_analysis.report import analyze_store
from tests.analysis.tracegen import annotation, event, kernel, store_of


def _entry(events: list[dict], buckets: int = 10, **header: object) -> dict:
    store = store_of(events, **header)
    return {"file": "t", "report": analyze_store(store), "activity": activity(store, buckets=buckets)}


def test_overlapping_kernels_on_two_streams_count_once_per_bucket() -> None:
    # 0..100 µs: kernels on two streams overlapping in 10..30, so 0..30 busy; 50..60 busy.
    store = store_of(
        [
            kernel("a", 0, 30, stream=7),
            kernel("b", 10, 20, stream=8),
            kernel("c", 50, 10),
            kernel("d", 90, 10),
        ]
    )
    act = activity(store, buckets=10)
    assert act is not None
    assert act["basis"] == "gpu"
    assert act["start_us"] == 0.0 and act["bucket_us"] == 10.0
    assert act["busy_pct"] == [100.0, 100.0, 100.0, 0.0, 0.0, 100.0, 0.0, 0.0, 0.0, 100.0]


def test_a_trace_without_gpu_ops_is_measured_by_its_cpu_operators() -> None:
    store = store_of([event("aten::mm", "cpu_op", 0, 25), event("aten::add", "cpu_op", 75, 25)])
    act = activity(store, buckets=4)
    assert act is not None and act["basis"] == "cpu"
    assert act["busy_pct"] == [100.0, 0.0, 0.0, 100.0]


def test_a_trace_with_nothing_to_measure_has_no_activity() -> None:
    assert activity(store_of([annotation("step", 0, 10)])) is None


def test_ranks_are_aligned_on_wall_clock_time_and_resampled_exactly() -> None:
    # Rank 0: busy 0..50 of 0..100 µs. Rank 1 starts 100 µs later in wall-clock time (its base),
    # busy its whole 100 µs. Grid: 0..200 µs in 4 columns of 50 µs.
    r0 = _entry([kernel("k", 0, 50), kernel("k", 99, 1)], distributedInfo={"rank": 0})
    r1 = _entry([kernel("k", 0, 100)], distributedInfo={"rank": 1}, baseTimeNanoseconds=100_000)
    got = overview([r1, r0], columns=4)
    assert got is not None
    assert got["start_us"] == 0.0 and got["column_us"] == 50.0 and got["basis"] == "gpu"
    by_rank = {r["rank"]: r for r in got["ranks"]}
    assert [r["rank"] for r in got["ranks"]] == [0, 1]  # sorted by rank, whatever the trace order
    assert by_rank[0]["index"] == 1 and by_rank[1]["index"] == 0
    assert by_rank[0]["busy_pct"] == [100.0, 2.0, None, None]  # 1 µs of 50; no data after its end
    assert by_rank[1]["busy_pct"] == [None, None, 100.0, 100.0]
    assert by_rank[1]["base_us"] == 100.0


def test_a_column_half_outside_a_trace_is_the_share_of_the_part_it_covers() -> None:
    r0 = _entry([kernel("k", 0, 100)], distributedInfo={"rank": 0})  # busy 0..100
    r1 = _entry([kernel("k", 0, 25), kernel("k", 125, 25)], distributedInfo={"rank": 1})  # 0..150
    got = overview([r0, r1], columns=3)  # 0..150 in columns of 50
    assert got is not None
    rows = {r["rank"]: r["busy_pct"] for r in got["ranks"]}
    assert rows[0] == [100.0, 100.0, None]
    assert rows[1] == [50.0, 0.0, 50.0]


def test_profiled_steps_come_along_as_offsets_from_the_grid_start() -> None:
    events = [
        annotation("ProfilerStep#7", 10, 40),
        annotation("ProfilerStep#8", 50, 50),
        kernel("k", 20, 10),
        kernel("k", 60, 10),
    ]
    got = overview([_entry(events, buckets=9, distributedInfo={"rank": 0})], columns=9)  # 10 µs each
    assert got is not None
    assert got["start_us"] == 10.0  # the first step starts before the first kernel
    assert got["ranks"][0]["steps"] == [[0.0, 40.0, 7], [40.0, 90.0, 8]]
    # the trace's span, not its GPU's: 10..20 is an idle GPU (0 %), not a gap in the data
    assert got["ranks"][0]["busy_pct"] == pytest.approx([0, 100, 0, 0, 0, 100, 0, 0, 0])


def test_no_trace_with_activity_gives_no_overview() -> None:
    assert overview([{"file": "t", "report": {}, "activity": None}]) is None
