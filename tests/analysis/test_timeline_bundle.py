"""The timeline written at ingest: saved once, memory-mapped back, answering like the built one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from profilerhub_analysis.build import load_trace
from profilerhub_analysis.timeline.binary import decode_window
from profilerhub_analysis.timeline.bundle import TraceTimeline

from .tracegen import kernel, runtime, store_of

NEGATIVE_QUEUE = "traces/hta/tests/data/negative_queue_length_values_check/rank0.json.gz"


def _save(timeline: TraceTimeline, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in timeline.to_files().items():
        (directory / name).write_bytes(data)
    return directory


@pytest.fixture(scope="module")
def real(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[TraceTimeline, TraceTimeline]:
    path = shared_dir / NEGATIVE_QUEUE
    if not path.exists():
        pytest.skip(f"{path} not found")
    built = TraceTimeline.build(load_trace(path), source="rank0")
    return built, TraceTimeline.open(_save(built, tmp_path_factory.mktemp("timeline")))


def test_opened_timeline_is_memory_mapped_and_answers_windows_byte_for_byte(
    real: tuple[TraceTimeline, TraceTimeline],
) -> None:
    built, opened = real
    assert isinstance(opened.index._ts, np.memmap)
    end = opened.lanes["t_end"]
    for start, stop, px in ((0, end, 2000), (end // 3, end // 3 + 50_000, 800), (0, end, 1)):
        assert opened.window_bytes(start, stop, px) == built.window_bytes(start, stop, px)


def test_binary_window_holds_what_the_window_query_returned(
    real: tuple[TraceTimeline, TraceTimeline],
) -> None:
    _, tl = real
    end = tl.lanes["t_end"]
    header, cols = decode_window(tl.window_bytes(0, end, 1500))
    window = tl.index.window(tl.origin, tl.origin + end, 1500)
    assert [lane["lane_id"] for lane in header["lanes"]] == [lane.lane_id for lane in window.lanes]
    assert len(cols["ev_id"]) == sum(len(lane.events) for lane in window.lanes)
    assert len(cols["bl_id"]) == sum(len(lane.blocks) for lane in window.lanes)
    first = next(lane for lane in window.lanes if len(lane.events))
    i = sum(len(lane.events) for lane in window.lanes[: window.lanes.index(first)])
    assert int(cols["ev_id"][i]) == int(first.events.event_id[0])
    assert cols["ev_start"][i] == pytest.approx(first.events.start[0] - window.t0_ns, rel=1e-6)
    assert header["names"][str(int(cols["ev_name"][i]))] == tl.index.names[int(first.events.name_id[0])]


def test_integer_columns_go_in_the_narrowest_type_that_holds_the_answer(
    real: tuple[TraceTimeline, TraceTimeline],
) -> None:
    _, tl = real
    end = tl.lanes["t_end"]
    header, cols = decode_window(tl.window_bytes(0, end, 1500))
    types = {name: c["type"] for name, c in header["columns"].items()}
    for name in ("ev_name", "ev_depth", "bl_depth", "bl_count", "ct_column", "ct_span"):
        top = int(cols[name].max()) if len(cols[name]) else 0
        assert types[name] == ("u8" if top < 256 else "u16" if top < 65536 else "u32"), name
    assert types["ct_column"] == "u16" and types["ev_start"] == "f32"


def test_lane_tree_has_hosts_gpus_and_utilisation_counters(real: tuple[TraceTimeline, TraceTimeline]) -> None:
    _, tl = real
    groups = {g["kind"]: g for g in tl.lanes["groups"]}
    assert {"host", "gpu"} <= set(groups)
    counters = {c["counter_id"]: c for c in tl.lanes["counters"]}
    assert counters[groups["gpu"]["util_counter"]]["kind"] == "gpu_util"
    assert counters[groups["host"]["util_counter"]]["kind"] == "cpu_util"
    assert all(lane["kind"] == "gpu_stream" for lane in groups["gpu"]["lanes"])


def test_gpu_utilisation_track_mean_is_the_busy_share_of_each_column() -> None:
    store = store_of([kernel("a", 0, 10), kernel("b", 30, 10)])
    tl = TraceTimeline.build(store)
    (gpu,) = [c for c in tl.lanes["counters"] if c["kind"] == "gpu_util"]
    window = tl.index.window(tl.origin, tl.origin + 40_000, 4, counters=[gpu["counter_id"]])
    (track,) = window.counters
    means = np.repeat(track.mean, track.span)
    assert means.tolist() == [100.0, 0.0, 0.0, 100.0]


def test_event_links_a_kernel_to_its_launch_and_back() -> None:
    store = store_of([runtime("cudaLaunchKernel", 0, 2, 11), kernel("gemm", 10, 5, 11)])
    tl = TraceTimeline.build(store)
    (k,) = tl.search("gemm")["matches"]
    detail = tl.event(k["id"])
    assert detail is not None and detail["kind"] == "kernel" and detail["args"]["correlation"] == 11
    assert detail["launch"]["name"] == "cudaLaunchKernel" and detail["launch"]["latency_ns"] == 8000
    launch = tl.event(detail["launch"]["id"])
    assert launch is not None and [e["id"] for e in launch["launched"]] == [k["id"]]
    assert tl.event(99) is None


def test_search_is_case_insensitive_in_time_order_and_pages_with_after() -> None:
    store = store_of(
        [kernel("NCCL_b", 20, 1), kernel("nccl_a", 5, 1), kernel("gemm", 0, 1), kernel("xnccl", 30, 1)]
    )
    tl = TraceTimeline.build(store)
    found = tl.search("Nccl")
    assert [m["name"] for m in found["matches"]] == ["nccl_a", "NCCL_b", "xnccl"]
    later = tl.search("nccl", limit=1, after=found["matches"][1]["start"])
    assert [m["name"] for m in later["matches"]] == ["NCCL_b"] and later["more"] and later["total"] == 3
