"""TensorFlow profiler traces: a real CPU run and SYNTHETIC GPU traces built to TF's format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest

from profilerhub_analysis import reader
from profilerhub_analysis.build import load_trace, parse_trace
from profilerhub_analysis.errors import TraceFormatError
from profilerhub_analysis.report import analyze_store
from profilerhub_analysis.store import EventStore, Kind

from .tfgen import DERIVED_LINES, api_call, encode, gpu_kernel, gpu_pid, metadata, one_step, write_trace

REAL_CPU_TRACE = (
    Path(__file__).resolve().parent.parent
    / "data/tensorflow/plugins/profile/2026_12_01_19_29_58/vm.trace.json.gz"
)
CLI = [sys.executable, "-m", "profilerhub.cli.main", "analyze"]


def _store(events: list[dict], end_marker: bool = True) -> EventStore:
    return parse_trace(encode(events, end_marker), source="tf")


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ) | {"COLUMNS": "160"}
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=120, env=env)


def test_gpu_busy_time_counts_only_stream_lines_not_the_derived_lines() -> None:
    report = analyze_store(_store(one_step()))
    (temporal,) = report["temporal"]
    # kernels 110-130 and 135-140, memcpy 100-104: the XLA/TF op and step spans over them add nothing
    assert temporal == {
        "device": 0,
        "idle_us": 11.0,
        "compute_us": 25.0,
        "non_compute_us": 4.0,
        "span_us": 40.0,
        "idle_pct": 27.5,
        "compute_pct": 62.5,
    }
    assert [(k["name"], k["count"], k["total_us"]) for k in report["kernels"]] == [
        ("volta_sgemm_128x64_nn", 1, 20.0),
        ("relu_kernel", 1, 5.0),
    ]
    assert report["kernel_time_us"] == 25.0
    assert report["kernel_kinds"] == {"compute_us": 25.0, "communication_us": 0.0, "memory_us": 4.0}


def test_kinds_follow_the_lanes_and_names_of_a_tensorflow_trace() -> None:
    store = _store(one_step())
    kinds = {
        (store.name_list[n], int(k)) for n, k in zip(store.col("name_id"), store.col("kind"), strict=True)
    }
    assert kinds == {
        ("train 0", Kind.USER_ANNOTATION),
        ("MatMul", Kind.CPU_OP),
        ("cuMemcpyHtoDAsync_v2", Kind.DRIVER),
        ("cuLaunchKernel", Kind.DRIVER),
        ("cudaLaunchKernel", Kind.RUNTIME),
        ("volta_sgemm_128x64_nn", Kind.KERNEL),
        ("relu_kernel", Kind.KERNEL),
        ("MemcpyH2D", Kind.MEMCPY),
        ("0", Kind.GPU_USER_ANNOTATION),
        ("fusion.1", Kind.GPU_USER_ANNOTATION),
        ("MatMul", Kind.GPU_USER_ANNOTATION),
    }
    lanes = list(
        zip(store.lane_column("kind"), store.lane_column("name"), store.lane_column("device"), strict=True)
    )
    assert lanes == [
        ("cpu_thread", "/host:CPU (701) python3", -1),
        ("cpu_thread", "/host:CPU (701) tf_Compute", -1),
        ("gpu_stream", "GPU 0 Stream #14(Compute)", 0),
        ("gpu_stream", "GPU 0 Stream #15(MemcpyH2D)", 0),
        ("gpu_stream", "GPU 0 Steps", 0),
        ("gpu_stream", "GPU 0 XLA Ops", 0),
        ("gpu_stream", "GPU 0 TensorFlow Ops", 0),
    ]


def test_launch_delay_joins_cupti_api_calls_by_their_string_correlation_id() -> None:
    latency = analyze_store(_store(one_step()))["launch_latency"]
    assert (latency["count"], latency["min_us"], latency["p50_us"], latency["max_us"]) == (3, 3.0, 6.0, 28.0)
    assert latency["by_api"] == {"cuMemcpyHtoDAsync_v2": 1, "cuLaunchKernel": 1, "cudaLaunchKernel": 1}
    assert latency["unmatched_gpu_ops"] == 0


def test_streams_bytes_and_occupancy_come_from_the_lines_and_details_strings() -> None:
    store = _store(one_step())
    report = analyze_store(store)
    assert [(r["stream"], r["ops"], r["idle_us"]) for r in report["idle_breakdown"]] == [
        (14, 2, 5.0),
        (15, 1, 0.0),
    ]
    # both kernels of stream 14 were launched (101, 105 µs) before the first one started (110)
    queues = [(q["stream"], q["count"], q["max"]) for q in report["queue_length"]]
    assert queues == [(14, 4, 2.0), (15, 2, 1.0)]
    (copy,) = report["memory_ops"]
    assert (copy["kind"], copy["bytes"], copy["bandwidth_gbps"]) == ("MemcpyH2D", 4096, 1.024)
    kernels = store.col("kind") == Kind.KERNEL
    assert sorted(store.col("occupancy")[kernels].tolist()) == [25.0, 50.0]
    assert set(store.col("stream")[store.col("kind") == Kind.GPU_USER_ANNOTATION].tolist()) == {-1}


def test_step_markers_are_steps_split_by_what_the_gpu_did() -> None:
    store = _store(one_step())
    assert store.meta.producer == "tensorflow"
    # "train" with step_num 0 over 90-150 µs: kernels 25 µs, the copy 4 µs, the rest CPU only
    assert analyze_store(store)["steps"] == [
        {
            "step": 0,
            "name": "train 0",
            "start_us": 90.0,
            "duration_us": 60.0,
            "kernel_us": 25.0,
            "memory_us": 4.0,
            "sync_us": 0.0,
            "cpu_only_us": 31.0,
        }
    ]


def test_a_step_marker_already_named_by_its_step_keeps_its_name() -> None:
    events = one_step()
    events[len(metadata())]["name"] = "train 0"  # how newer exporters write it
    assert "train 0 0" not in _store(events).name_list
    assert [s["name"] for s in analyze_store(_store(events))["steps"]] == ["train 0"]


def test_a_kineto_trace_has_no_tensorflow_steps() -> None:
    kineto = [{"ph": "X", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": 0, "dur": 5, "name": "train 3"}]
    store = parse_trace(orjson.dumps({"traceEvents": kineto}))
    assert store.meta.producer == "kineto" and analyze_store(store)["steps"] == []


def test_two_gpus_are_told_apart_by_their_planes() -> None:
    events = [e for e in one_step(0) if e["ph"] == "X"] + one_step(1)
    events += metadata((0,))
    temporal = analyze_store(_store(events))["temporal"]
    assert [(t["device"], t["compute_us"]) for t in temporal] == [(0, 25.0), (1, 25.0)]


def test_the_end_marker_neither_slows_decoding_nor_counts_as_an_event() -> None:
    with_marker, without = _store(one_step()), _store(one_step(), end_marker=False)
    # the lenient path would have counted the marker as an event of unknown phase ("?")
    assert with_marker.meta.phases == without.meta.phases == {"M": 16, "X": 11}
    assert with_marker.meta.skipped == {} and with_marker.meta.events_total == 27
    assert with_marker.col("ts_ns").tolist() == without.col("ts_ns").tolist()


def test_a_gzipped_trace_loses_its_end_marker_in_place(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "vm.trace.json.gz"
    path.write_bytes(gzip.compress(encode(one_step(), True)))
    data = reader.read_bytes(path)
    assert isinstance(data, bytearray) and reader._without_end_marker(data) is data  # no copy
    assert data.rstrip().endswith(b"]}") and b"{}" not in data[-16:]
    assert (
        load_trace(path).col("ts_ns").tolist() == _store(one_step(), end_marker=False).col("ts_ns").tolist()
    )


def test_a_large_tensorflow_document_decoded_in_batches_reads_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = _store(one_step())
    monkeypatch.setattr(reader, "BATCH_THRESHOLD_BYTES", 100)
    monkeypatch.setattr(reader, "BATCH_EVENTS", 20)  # metadata (16 events) first, as TF writes it
    batched = _store(one_step())
    assert batched.meta.skipped == {} and batched.meta.phases == whole.meta.phases
    for column in ("kind", "stream", "correlation", "launch", "bytes", "occupancy", "device"):
        assert batched.col(column).tolist() == whole.col(column).tolist(), column


def test_arguments_written_as_numbers_read_like_strings() -> None:
    events = one_step()
    for e in events:
        if "correlation_id" in e.get("args", {}):
            e["args"]["correlation_id"] = int(e["args"]["correlation_id"])
    assert analyze_store(_store(events))["launch_latency"]["count"] == 3


def test_a_tpu_trace_is_refused_with_a_clear_message() -> None:
    events = [
        {"ph": "M", "pid": 701, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:TPU:0"}},
        {"ph": "X", "pid": 1, "tid": 3, "ts": 1.0, "dur": 2.0, "name": "fusion"},
    ]
    with pytest.raises(
        TraceFormatError, match=r"^tf: a TensorFlow trace of /device:TPU:0; .*NVIDIA GPUs only"
    ):
        _store(events)


def test_a_plane_of_another_device_is_other_work_not_gpu_work() -> None:
    events = [
        *one_step(),
        {"ph": "M", "pid": 50, "name": "process_name", "args": {"name": "/device:CUSTOM:0 (an accelerator)"}},
        {"ph": "X", "pid": 50, "tid": 1, "ts": 100.0, "dur": 30.0, "name": "custom_op"},
    ]
    store = _store(events)
    row = store.name_list.index("custom_op")
    assert store.col("kind")[store.col("name_id") == row].tolist() == [Kind.OTHER]
    assert analyze_store(store)["temporal"][0]["compute_us"] == 25.0


def test_a_document_that_is_no_trace_says_which_traces_are_read() -> None:
    with pytest.raises(TraceFormatError, match="PyTorch or TensorFlow profiler trace"):
        parse_trace(orjson.dumps({"displayTimeUnit": "ns", "events": []}), source="x.json")


def test_a_kineto_trace_keeps_its_categories_beside_a_tensorflow_like_name() -> None:
    # a thread named like a TF stream means nothing without TF's plane names
    kineto = [
        {"ph": "M", "pid": 0, "tid": 7, "name": "thread_name", "args": {"name": "Stream #7"}},
        {
            "ph": "X",
            "cat": "kernel",
            "pid": 0,
            "tid": 7,
            "ts": 1,
            "dur": 2,
            "name": "k",
            "args": {"stream": 7},
        },
    ]
    store = parse_trace(orjson.dumps({"traceEvents": kineto}))
    assert store.col("kind").tolist() == [Kind.KERNEL] and store.lane_column("name").tolist() == [
        "GPU 0 stream 7"
    ]


def test_the_real_cpu_trace_reads_as_host_threads_only() -> None:
    store = load_trace(REAL_CPU_TRACE)
    assert store.meta.events_total == 1131 and len(store) == 1121 and store.meta.skipped == {}
    kinds = np.bincount(store.col("kind"), minlength=len(Kind))
    assert (kinds[Kind.CPU_OP], kinds[Kind.USER_ANNOTATION], kinds.sum()) == (1117, 4, 1121)  # 4 step markers
    names = store.lane_column("name").tolist()
    assert len(names) == 4 and all(n.startswith("vm /host:CPU (701) ") for n in names)
    assert set(store.lane_column("kind").tolist()) == {"cpu_thread"}
    # TF's exporter names a step marker by its step: "train" with step_num 0 reads "train 0"
    assert "ExecutorState::Process" in store.name_list and "train 0" in store.name_list
    report = analyze_store(store)
    assert report["kernels"] == [] and report["temporal"] == []
    steps = report["steps"]
    assert [s["name"] for s in steps] == ["train 0", "train 1", "train 2", "train 3"]
    assert all(s["cpu_only_us"] == s["duration_us"] > 0 for s in steps)


def test_cli_reads_a_tensorflow_gpu_trace_as_table_and_json(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "plugins/profile/2026_12_01_10_00_00/worker0.trace.json.gz", one_step())
    table = _run(path)
    assert table.returncode == 0, table.stderr
    assert "volta_sgemm_128x64_nn" in table.stdout and "relu_kernel" in table.stdout
    done = _run(path, "-f", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["kernel_time_us"] == 25.0 and out["launch_latency"]["count"] == 3
    assert out["events"] == 27 and out["skipped_events"] == {}


def test_cli_reads_a_tensorflow_run_folder(tmp_path: Path) -> None:
    run = tmp_path / "logs/plugins/profile/2026_12_01_10_00_00"
    write_trace(run / "worker0.trace.json.gz", one_step())
    (run / "worker0.xplane.pb").write_bytes(b"\x0a\x00")  # what TF also writes there: not a trace
    done = _run(tmp_path / "logs", "-f", "json")
    assert done.returncode == 0, done.stderr
    (rank,) = json.loads(done.stdout)["ranks"]
    assert rank["source"] == "worker0.trace.json.gz" and rank["kernel_time_us"] == 25.0


def test_cli_reads_the_real_cpu_trace_and_refuses_a_tpu_trace(tmp_path: Path) -> None:
    done = _run(REAL_CPU_TRACE)
    assert done.returncode == 0, done.stderr
    assert "1,131 events" in done.stdout and "No GPU work" in done.stdout
    tpu = tmp_path / "tpu.trace.json.gz"
    write_trace(tpu, [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:TPU:0"}}])
    refused = _run(tpu)
    assert refused.returncode == 2
    assert refused.stderr.strip().startswith("error: tpu.trace.json.gz: a TensorFlow trace of /device:TPU:0")


def test_derived_line_ids_stay_apart_from_stream_ids() -> None:
    store = _store(one_step())
    gpu = store.lane_column("kind") == "gpu_stream"
    assert set(store.lane_column("tid")[gpu].tolist()) == {14, 15, *DERIVED_LINES.values()}
    assert np.all(store.lane_column("device")[gpu] == 0) and gpu_pid(0) == 1
    assert api_call("cuLaunchKernel", 0, 1, 5)["args"]["correlation_id"] == "5"
    assert gpu_kernel("k", 0, 1, 5)["args"]["kernel_details"].endswith("occ_pct:50")


def test_a_kineto_trace_naming_a_tf_plane_keeps_its_launch_links() -> None:
    # PyTorch/XLA and user annotations may write "/device:GPU:0" into a name: the sniff takes the
    # document for TensorFlow's, the planes say it is not, and Kineto's correlation ids must stay.
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "xla::op /device:GPU:0", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 3,
         "args": {"correlation": 7, "device": 0, "stream": 7}},
    ]  # fmt: skip
    store = parse_trace(orjson.dumps({"traceEvents": events}))
    assert store.meta.producer == "kineto"
    kernel = int(np.flatnonzero(store.col("kind") == Kind.KERNEL)[0])
    assert store.col("correlation")[kernel] == 7 and store.col("launch")[kernel] >= 0
