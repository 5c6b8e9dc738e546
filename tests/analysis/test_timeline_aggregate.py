"""A box selection's aggregate: the events inside a range, by name, with their time clipped to it."""

from __future__ import annotations

from profilerhub_analysis.timeline.bundle import TraceTimeline

from .tracegen import kernel, store_of


def test_aggregate_counts_events_overlapping_the_range_and_clips_their_time() -> None:
    timeline = TraceTimeline.build(store_of([kernel("a", 0, 10), kernel("b", 30, 10), kernel("a", 50, 10)]))
    answer = timeline.aggregate(5_000, 55_000)  # ns from the origin (the first event's start)
    assert answer["events"] == 3
    assert answer["ops"] == [
        {"name": "a", "count": 2, "total_ns": 10_000},
        {"name": "b", "count": 1, "total_ns": 10_000},
    ]


def test_aggregate_of_an_empty_range_or_other_lanes_is_empty() -> None:
    timeline = TraceTimeline.build(store_of([kernel("a", 0, 10)]))
    assert timeline.aggregate(20_000, 30_000) == {"start": 20_000, "end": 30_000, "events": 0, "ops": []}
    assert timeline.aggregate(0, 10_000, lanes=[999])["events"] == 0
