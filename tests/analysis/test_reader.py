"""Reading traces as they exist in the wild, and refusing bad input with a clear message."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import orjson
import pytest

from profilerhub_analysis.build import load_trace, parse_trace
from profilerhub_analysis.errors import TraceFormatError, TraceTooLarge
from profilerhub_analysis.store import Kind

from .tracegen import encode, event, kernel, runtime, store_of, write_trace


def test_gzipped_and_plain_files_give_the_same_store(tmp_path: Path) -> None:
    events = [runtime("cudaLaunchKernel", 10, 5, 1), kernel("k", 20, 3, 1)]
    gz = load_trace(write_trace(tmp_path / "a.json.gz", events))
    plain = load_trace(write_trace(tmp_path / "a.json", events, gz=False))
    assert gz.events.equals(plain.events)
    assert len(gz) == 2


def test_gzip_is_detected_by_content_not_by_file_name(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_bytes(gzip.compress(encode([kernel("k", 1, 1)])))
    assert len(load_trace(path)) == 1


def test_truncated_gzip_is_a_format_error(tmp_path: Path) -> None:
    data = gzip.compress(encode([kernel("k", i, 1) for i in range(1000)]))
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match="truncated"):
        load_trace(path)


def test_corrupt_gzip_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json.gz"
    path.write_bytes(b"\x1f\x8b" + b"\x00" * 64)
    with pytest.raises(TraceFormatError, match="gzip"):
        load_trace(path)


def test_text_that_is_not_json_is_a_format_error() -> None:
    with pytest.raises(TraceFormatError, match="not valid JSON"):
        parse_trace(b"this is not { json")


def test_json_without_trace_events_is_a_format_error() -> None:
    with pytest.raises(TraceFormatError, match="traceEvents"):
        parse_trace(b'{"schemaVersion": 1, "events": []}')


def test_trace_events_that_is_not_a_list_is_a_format_error() -> None:
    with pytest.raises(TraceFormatError, match="not a list"):
        parse_trace(b'{"traceEvents": {"ph": "X"}}')


def test_bare_event_array_is_accepted() -> None:
    store = parse_trace(orjson.dumps([kernel("k", 1, 2), {"ph": "M", "name": "process_name"}]))
    assert store.meta.events_total == 2
    assert len(store) == 1


def test_events_with_wrong_field_types_are_skipped_and_counted() -> None:
    events = [
        kernel("good", 1, 2),
        {"ph": "X", "cat": "kernel", "name": ["not", "a", "string"], "pid": 0, "tid": 7, "ts": 3, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 1, "args": "oops"},
        "not an event",
        kernel("also good", 9, 1),
    ]
    store = store_of(events)
    assert len(store) == 2
    assert store.meta.skipped == {"malformed event": 3}
    assert store.meta.events_total == 5


def test_x_events_without_valid_ts_or_dur_are_skipped_and_counted() -> None:
    events = [
        kernel("ok", 1, 2),
        {"ph": "X", "cat": "kernel", "name": "no dur", "pid": 0, "tid": 7, "ts": 3},
        {"ph": "X", "cat": "kernel", "name": "no ts", "pid": 0, "tid": 7, "dur": 3},
        kernel("negative", 4, -1),
        kernel("absurd", 5, 1e15),
    ]
    store = store_of(events)
    assert len(store) == 1
    assert store.meta.skipped == {
        "X event with a missing or invalid ts": 1,
        "X event with a missing, negative or absurd dur": 3,
    }


def test_numbers_written_as_strings_are_read_leniently() -> None:
    store = store_of(
        [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "10", "dur": "2.5"}]
    )
    assert store.col("ts_ns").tolist() == [10_000]
    assert store.col("dur_ns").tolist() == [2_500]


def test_size_limit_stops_a_plain_file_before_reading_it(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "big.json", [kernel("k", i, 1) for i in range(100)], gz=False)
    with pytest.raises(TraceTooLarge, match="limit"):
        load_trace(path, max_bytes=1000)


def test_size_limit_stops_a_gzip_bomb_while_decompressing(tmp_path: Path) -> None:
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (50 << 20) + b"]}"))
    assert path.stat().st_size < 1 << 20
    with pytest.raises(TraceTooLarge, match="PROFILERHUB_ANALYSIS_MAX_TRACE_BYTES"):
        load_trace(path, max_bytes=4 << 20)


def test_size_limit_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_trace(tmp_path / "t.json", [kernel("k", i, 1) for i in range(100)], gz=False)
    monkeypatch.setenv("PROFILERHUB_ANALYSIS_MAX_TRACE_BYTES", "500")
    with pytest.raises(TraceTooLarge):
        load_trace(path)


def test_integer_epoch_microseconds_convert_to_exact_nanoseconds() -> None:
    store = store_of([kernel("k", 1_695_835_572_943_623, 9)])
    assert store.col("ts_ns").tolist() == [1_695_835_572_943_623_000]
    assert store.meta.ts_type == "int"


def test_float_microseconds_keep_their_nanosecond_decimals() -> None:
    store = store_of([kernel("k", 4_203_669_603_454.206, 22.441), kernel("k", 2_413_669_097_444.592, 0.001)])
    assert sorted(store.col("ts_ns").tolist()) == [2_413_669_097_444_592, 4_203_669_603_454_206]
    assert sorted(store.col("dur_ns").tolist()) == [1, 22_441]
    assert store.meta.ts_type == "float"


def test_base_time_nanoseconds_and_distributed_rank_land_in_the_metadata() -> None:
    store = store_of(
        [kernel("k", 1.5, 1)],
        baseTimeNanoseconds=1_735_632_360_000_000_000,
        distributedInfo={"rank": 3, "world_size": 8},
        deviceProperties=[{"id": 0, "name": "NVIDIA H100"}],
    )
    assert store.meta.base_time_ns == 1_735_632_360_000_000_000
    assert store.meta.rank == 3
    assert store.meta.device_properties[0]["name"] == "NVIDIA H100"


def test_missing_metadata_is_fine() -> None:
    store = store_of([kernel("k", 1, 1)])
    assert store.meta.base_time_ns is None and store.meta.rank is None
    assert store.meta.device_properties == []


def test_legacy_2021_category_names_map_to_the_same_kinds() -> None:
    events = [
        event("aten::mm", "Operator", 1, 10),
        event("cudaLaunchKernel", "Runtime", 2, 3, correlation=5),
        kernel("gemm", 8, 4, 5, cat="Kernel"),
        kernel("Memcpy HtoD (Pageable -> Device)", 13, 1, cat="Memcpy"),
        kernel("Memset (Device)", 15, 1, cat="Memset"),
        event("fn", "python_function", 1, 1),
    ]
    store = store_of(events)
    kinds = dict(
        zip([store.name_list[i] for i in store.col("name_id")], store.col("kind").tolist(), strict=True)
    )
    assert kinds == {
        "aten::mm": Kind.CPU_OP,
        "cudaLaunchKernel": Kind.RUNTIME,
        "gemm": Kind.KERNEL,
        "Memcpy HtoD (Pageable -> Device)": Kind.MEMCPY,
        "Memset (Device)": Kind.MEMSET,
        "fn": Kind.PYTHON_FUNCTION,
    }


def test_legacy_stream_labels_stay_on_gpu_lanes() -> None:
    store = store_of([kernel("k", 1, 1) | {"tid": "stream 7"}, event("op", "cpu_op", 0, 5)])
    lanes = store.lanes.to_pylist()
    gpu = [ln for ln in lanes if ln["kind"] == "gpu_stream"]
    assert gpu == [
        {"kind": "gpu_stream", "pid": 0, "tid": 7, "device": 0, "name": "GPU 0 stream 7", "sort": 1}
    ]


def test_rocm_string_streams_are_parsed() -> None:
    store = store_of(
        [runtime("hipLaunchKernel", 1, 2, 9, stream="0x0"), kernel("k", 5, 1, 9, device=2, stream=0)]
    )
    assert sorted(store.col("stream").tolist()) == [0, 0]
    assert store.col("launch").max() >= 0


def test_kineto_spans_row_with_string_pid_goes_to_an_other_lane() -> None:
    span = {
        "ph": "X",
        "cat": "Trace",
        "name": "PyTorch Profiler (0)",
        "pid": "Spans",
        "tid": "PyTorch Profiler",
        "ts": 0,
        "dur": 100,
    }
    store = store_of([span, kernel("k", 1, 1)])
    kinds = store.lanes.column("kind").to_pylist()
    assert kinds == ["gpu_stream", "other"]
    assert store.lanes.column("name").to_pylist()[1] == "Spans / PyTorch Profiler"


def test_events_count_every_phase() -> None:
    events = [
        kernel("k", 1, 1),
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}},
        {"ph": "i", "name": "mark", "pid": 0, "tid": 0, "ts": 1, "s": "t"},
        {"ph": "s", "id": 1, "pid": 0, "tid": 0, "ts": 1, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 1, "pid": 0, "tid": 0, "ts": 1, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "C", "name": "util", "pid": 0, "ts": 1, "args": {"gpu": 50}},
    ]
    store = store_of(events)
    assert store.meta.events_total == 6
    assert store.meta.phases == {"X": 1, "M": 1, "i": 1, "s": 1, "f": 1, "C": 1}


def test_ns_conversion_is_vectorised_and_exact_on_real_float_trace(shared_dir: Path) -> None:
    path = shared_dir / "traces/hta/tests/data/triton_example/triton_example.json.gz"
    store = load_trace(path)
    k = np.flatnonzero(store.col("kind") == Kind.KERNEL)
    assert store.col("ts_ns")[k].tolist() == [2_413_669_097_444_592]
    assert store.col("dur_ns")[k].tolist() == [1_760]


def test_json_that_is_not_an_object_or_array_is_a_format_error() -> None:
    with pytest.raises(TraceFormatError, match="not a trace document"):
        parse_trace(b"42")


def test_empty_trace_analyses_to_empty_results() -> None:
    from profilerhub_analysis.report import analyze_store

    report = analyze_store(parse_trace(b'{"traceEvents": []}'))
    assert report["events"] == 0 and report["kernels"] == [] and report["temporal"] == []
    assert report["launch_latency"]["count"] == 0 and report["steps"] == []


def test_null_args_and_null_stream_are_read_as_absent() -> None:
    store = store_of([kernel("k", 1, 2) | {"args": None}, kernel("j", 3, 1) | {"args": {"stream": None}}])
    assert len(store) == 2 and store.meta.skipped == {}


def test_numeric_string_thread_ids_are_cpu_threads_and_still_join_launches() -> None:
    store = store_of(
        [
            runtime("cudaLaunchKernel", 1, 2, 5) | {"pid": "4242", "tid": "77"},
            kernel("k", 6, 1, 5, cat="Kernel") | {"tid": "stream 7"},
        ]
    )
    lanes = store.lanes.to_pylist()
    assert [(ln["kind"], ln["pid"], ln["tid"]) for ln in lanes] == [
        ("cpu_thread", 4242, 77),
        ("gpu_stream", 0, 7),
    ]
    assert int((store.col("launch") >= 0).sum()) == 1


def test_large_documents_are_decoded_in_batches_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    import profilerhub_analysis.reader as reader_module

    events = [runtime("cudaLaunchKernel", 10 * i, 2, i) for i in range(50)]
    events += [kernel(f"k{i % 3}", 10 * i + 5, 1, i, stream=7 + i % 2) for i in range(50)]
    events += [{"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}}]
    events += [kernel("bad", 1, 1) | {"name": 5}]  # forces the lenient path in one batch
    data = encode(events, distributedInfo={"rank": 2})
    whole = parse_trace(data)
    monkeypatch.setattr(reader_module, "BATCH_THRESHOLD_BYTES", 100)
    monkeypatch.setattr(reader_module, "BATCH_EVENTS", 7)
    batched = parse_trace(data)
    assert batched.events.equals(whole.events)
    assert batched.lanes.equals(whole.lanes)
    assert batched.name_list == whole.name_list
    assert batched.meta == whole.meta
    assert batched.meta.skipped == {"malformed event": 1} and batched.meta.rank == 2


def test_events_of_unknown_or_missing_phase_are_counted_not_dropped() -> None:
    store = store_of([kernel("k", 1, 1), {"ph": "Z", "name": "future phase"}, {"name": "no phase at all"}])
    assert store.meta.events_total == 3
    assert store.meta.phases == {"X": 1, "?": 2}
    assert store.meta.skipped == {}


@pytest.mark.parametrize("batched", [False, True], ids=["whole", "batched"])
def test_a_mistyped_field_costs_that_field_or_event_not_the_documents_fast_path(
    batched: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A string ``args.bytes`` in one event of a large trace (as in a real MI300X trace) used to send
    every event down the per-event path, 10x slower. Now a numeric field written as text costs that
    field at most, and an event the typed decoder refuses (a name that is a number) costs that event
    alone: only it takes the slow path (the rate is benchmarks/bench_reader_mistyped.py's)."""
    import profilerhub_analysis.reader as reader_module
    from profilerhub_analysis.build import build_store

    if batched:
        monkeypatch.setattr(reader_module, "BATCH_THRESHOLD_BYTES", 1000)
        monkeypatch.setattr(reader_module, "BATCH_EVENTS", 7_000)
    events = [runtime("cudaMemcpyAsync", 10 * i, 2, i) for i in range(10_000)]
    events += [kernel(f"k{i % 5}", 10 * i + 5, 1, i, bytes=4096) for i in range(10_000)]
    bad = [dict(e) for e in events]
    bad[15_000] = bad[15_000] | {"args": {**bad[15_000]["args"], "bytes": "n/a"}}  # that field: -1
    bad[15_001] = bad[15_001] | {"args": {**bad[15_001]["args"], "bytes": "8192"}}  # a number as text
    bad[15_002] = bad[15_002] | {"name": 5}  # refused by the typed decoder: that event only
    clean = parse_trace(encode(events))
    decoded = reader_module.decode(encode(bad))
    store = build_store(decoded)
    assert decoded.lenient_events == 1  # the fast path took the other 19,999
    assert store.meta.skipped == {"malformed event": 1} and store.meta.events_total == 20_000
    assert len(store) == len(clean) - 1
    at = {int(ts): i for i, ts in enumerate(store.col("ts_ns"))}
    kernel_ts = [(10 * i + 5) * 1000 for i in (5_000, 5_001, 5_002, 5_003)]
    assert [int(store.col("bytes")[at[t]]) if t in at else None for t in kernel_ts] == [-1, 8192, None, 4096]
    assert int((store.col("launch") >= 0).sum()) == int((clean.col("launch") >= 0).sum()) - 1
