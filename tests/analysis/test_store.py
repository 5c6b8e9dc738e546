"""The event store contract: columns, ordering, lanes, the launch join, counters, persistence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from profilerhub_analysis.build import load_trace
from profilerhub_analysis.store import EVENT_COLUMNS, EventStore, Kind, arrow_schema

from .tracegen import CPU_PID, CPU_TID, encode, event, kernel, runtime, store_of


def _sample() -> EventStore:
    return store_of(
        [
            kernel("late", 50, 5, 2, stream=7),
            runtime("cudaLaunchKernel", 30, 4, 2),
            runtime("cudaLaunchKernel", 10, 4, 1),
            kernel("early", 20, 5, 1, stream=7),
            kernel("other stream", 25, 5, None, stream=9),
            event("aten::mm", "cpu_op", 5, 40),
            {"ph": "M", "name": "thread_name", "pid": CPU_PID, "tid": CPU_TID, "args": {"name": "main"}},
            {"ph": "M", "name": "process_name", "pid": CPU_PID, "tid": 0, "args": {"name": "python"}},
        ],
        baseTimeNanoseconds=1_700_000_000_000_000_000,
    )


def test_event_columns_follow_the_schema() -> None:
    assert _sample().events.schema.equals(arrow_schema(EVENT_COLUMNS))


def test_events_are_sorted_by_lane_then_start() -> None:
    store = _sample()
    lane, ts = store.col("lane_id"), store.col("ts_ns")
    assert np.all(np.diff(lane) >= 0)
    same = np.diff(lane) == 0
    assert np.all(np.diff(ts)[same] >= 0)


def test_lanes_list_cpu_threads_before_gpu_streams_with_display_names() -> None:
    lanes = _sample().lanes.to_pylist()
    assert [(ln["kind"], ln["tid"], ln["name"]) for ln in lanes] == [
        ("cpu_thread", CPU_TID, f"python ({CPU_PID}) main"),
        ("gpu_stream", 7, "GPU 0 stream 7"),
        ("gpu_stream", 9, "GPU 0 stream 9"),
    ]
    assert [ln["sort"] for ln in lanes] == [0, 1, 2]


def test_launch_column_points_each_gpu_op_at_its_runtime_call() -> None:
    store = _sample()
    names = [store.name_list[i] for i in store.col("name_id")]
    launch = store.col("launch")
    ts = store.col("ts_ns")
    by_name = {n: i for i, n in enumerate(names)}
    assert ts[launch[by_name["early"]]] == 10_000
    assert ts[launch[by_name["late"]]] == 30_000
    assert launch[by_name["other stream"]] == -1
    assert launch[by_name["aten::mm"]] == -1


def test_cuda_sync_records_never_act_as_launches() -> None:
    store = store_of(
        [
            kernel("Event Sync", 1, 1, 5, cat="cuda_sync"),
            runtime("cudaLaunchKernel", 2, 1, 5),
            kernel("k", 5, 1, 5),
        ]
    )
    launch = store.col("launch")
    k = int(np.flatnonzero(store.col("kind") == Kind.KERNEL)[0])
    assert store.name_list[store.col("name_id")[launch[k]]] == "cudaLaunchKernel"


def test_store_round_trips_through_a_directory(tmp_path: Path) -> None:
    store = _sample()
    store.to_dir(tmp_path / "store")
    back = EventStore.from_dir(tmp_path / "store")
    assert back.events.equals(store.events)
    assert back.lanes.equals(store.lanes)
    assert back.names.equals(store.names)
    assert back.meta == store.meta
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == [
        "counters.parquet",
        "events.parquet",
        "lanes.parquet",
        "meta.json",
        "names.parquet",
    ]


def test_store_round_trips_through_bytes_and_file_mappings() -> None:
    store = _sample()
    back = EventStore.from_bytes(store.to_bytes())
    assert back.events.equals(store.events) and back.meta == store.meta
    files = store.to_files()
    assert all(isinstance(v, bytes) for v in files.values())
    assert EventStore.from_files(files).events.equals(store.events)


def test_counter_events_become_counter_series() -> None:
    store = store_of(
        [
            {"ph": "C", "name": "GPU util", "pid": 0, "ts": 20, "args": {"value": 80}},
            {"ph": "C", "name": "GPU util", "pid": 0, "ts": 10, "args": {"value": 40.5}},
            {"ph": "C", "name": "mem", "pid": 0, "ts": 10, "args": {"used": 1, "free": 3}},
            kernel("k", 1, 1),
        ]
    )
    rows = store.counters.to_pylist()
    assert rows == [
        {"name": "GPU util", "ts_ns": 10_000, "value": 40.5},
        {"name": "GPU util", "ts_ns": 20_000, "value": 80.0},
        {"name": "mem free", "ts_ns": 10_000, "value": 3.0},
        {"name": "mem used", "ts_ns": 10_000, "value": 1.0},
    ]


def test_pytorch_memory_instants_become_memory_counters() -> None:
    mem = {
        "ph": "i",
        "s": "t",
        "name": "[memory]",
        "pid": 1,
        "tid": 1,
        "ts": 5,
        "args": {
            "Total Allocated": 1024,
            "Total Reserved": 2048,
            "Device Type": 1,
            "Device Id": 0,
            "Bytes": 1024,
            "Addr": 1,
        },
    }
    store = store_of([mem, kernel("k", 1, 1)])
    assert store.counters.to_pylist() == [
        {"name": "GPU 0 memory allocated (bytes)", "ts_ns": 5000, "value": 1024.0},
        {"name": "GPU 0 memory reserved (bytes)", "ts_ns": 5000, "value": 2048.0},
    ]


def test_real_trace_joins_every_graph_kernel_to_its_launch(shared_dir: Path) -> None:
    store = load_trace(shared_dir / "traces/hta/tests/data/negative_queue_length_values_check/rank0.json.gz")
    launch = store.col("launch")
    names = np.array(store.name_list, dtype=object)
    api = names[store.col("name_id")[launch[launch >= 0]]]
    assert (api == "cudaGraphLaunch").sum() > 0
    assert (launch >= 0).sum() == 6875


def test_analysing_a_trace_never_imports_pyarrow(tmp_path: Path) -> None:
    # the CLI and workers that only analyse skip pyarrow's import time and ~50 MiB of memory
    trace = tmp_path / "t.json"
    trace.write_bytes(encode([runtime("cudaLaunchKernel", 1, 1, 1), kernel("k", 3, 1, 1)]))
    code = (
        "import sys; from profilerhub_analysis.report import analyze_file; "
        f"analyze_file({str(trace)!r}); print('pyarrow' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
