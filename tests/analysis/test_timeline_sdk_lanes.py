"""The SDK's annotations and steps on the timeline: a lane per thread, below that thread's lane."""

from __future__ import annotations

from profilerhub_analysis.sdk_records import AnnotationRecord
from profilerhub_analysis.timeline.binary import decode_window
from profilerhub_analysis.timeline.bundle import TraceTimeline

from .tracegen import CPU_TID, event, kernel, runtime, store_of

BASE = 1_700_000_000_000_000_000  # the trace's baseTimeNanoseconds (epoch ns)
MS = 1_000_000


def _trace() -> TraceTimeline:
    events = [event("aten::mm", "cpu_op", 1000 + i * 10_000, 4000) for i in range(5)]  # µs
    events += [runtime("cudaLaunchKernel", 2000, 10, correlation=1), kernel("gemm", 2100, 50, 1)]
    records = []
    for step in range(5):
        t = BASE + step * 10 * MS  # the SDK's clock: epoch ns
        records += [
            AnnotationRecord("step", f"step_{step}", t, t + 9 * MS, CPU_TID, "MainThread", 0, step),
            AnnotationRecord("annotation", "forward", t + MS, t + 5 * MS, CPU_TID, "MainThread", 1, step),
        ]
    records += [
        AnnotationRecord("annotation", "loader", BASE, BASE + MS, 999_999, "Loader", 0),  # another process
        AnnotationRecord("annotation", "later", BASE + 10_000 * MS, BASE + 10_001 * MS, CPU_TID, None, 0),
    ]
    store = store_of(events, baseTimeNanoseconds=BASE)
    return TraceTimeline.build(store, source="t", annotations=records)


def test_each_threads_sdk_annotations_get_a_lane_right_below_the_thread() -> None:
    tl = _trace()
    host = next(g for g in tl.lanes["groups"] if g["kind"] == "host")
    kinds = [lane["kind"] for lane in host["lanes"]]
    assert kinds[-2:] == ["cpu_thread", "sdk_thread"]
    sdk = host["lanes"][-1]
    assert sdk["name"] == "MainThread · SDK annotations" and sdk["tid"] == CPU_TID
    assert sdk["rows"] == 2 and sdk["events"] == 10  # steps with forward inside; other records left out
    assert [s["step"] for s in tl.lanes["steps"]] == [0, 1, 2, 3, 4]  # markers from ph.step
    assert tl.lanes["steps"][1]["start"] == 10 * MS - tl.lanes["trace_origin_ns"]


def test_sdk_records_are_events_a_window_search_and_the_event_panel_show() -> None:
    tl = _trace()
    sdk = next(lane for g in tl.lanes["groups"] for lane in g["lanes"] if lane["kind"] == "sdk_thread")
    header, cols = decode_window(tl.window_bytes(0, tl.lanes["t_end"], 4000, [sdk["lane_id"]], []))
    names = {header["names"][str(int(i))] for i in cols["ev_name"]}
    assert names == {f"step_{i}" for i in range(5)} | {"forward"}
    found = tl.search("forward")
    assert found["total"] == 5
    detail = tl.event(found["matches"][0]["id"])
    assert detail is not None and detail["kind"] == "sdk_annotation" and detail["dur"] == 4 * MS
    assert detail["depth"] == 1 and detail["lane_id"] == sdk["lane_id"] and detail["args"] == {}


def test_a_trace_without_sdk_records_has_no_sdk_lane() -> None:
    store = store_of([event("aten::mm", "cpu_op", 0, 10)])
    tl = TraceTimeline.build(store)
    assert all(lane["kind"] != "sdk_thread" for g in tl.lanes["groups"] for lane in g["lanes"])
