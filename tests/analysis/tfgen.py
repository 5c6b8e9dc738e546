"""SYNTHETIC TensorFlow profiler traces, built to the format TensorBoard's profile plugin exports.

Not from a real GPU run (this machine has none): a host plane (pid 701, ``/host:CPU``) with CUPTI
API calls, and ``/device:GPU:<n>`` planes (pid 1 + n) with ``Stream #<id>(...)`` lines and the
derived lines (``Steps``, ``XLA Ops``, ``TensorFlow Ops``...) that span over the kernels. As TF
writes them: no ``cat``, every argument value a string, ``ts``/``dur`` float µs from ps, and the
empty end marker ``{}`` after the last event. The real CPU-only trace beside the tests is
``tests/data/tensorflow`` (see its README).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson

HOST_PID = 701
PYTHON_TID, COMPUTE_TID = 11, 12
#: TF's derived lines get large line ids of their own.
DERIVED_LINES = {"Steps": 0xDEAD0000, "XLA Ops": 0xDEAD0003, "TensorFlow Ops": 0xDEAD0005}


def gpu_pid(device: int) -> int:
    return 1 + device


def _us(value_us: float) -> float:
    """µs as TF computes them: integer ps / 1e6."""
    return round(value_us * 1e6) / 1e6


def event(name: str, pid: int, tid: int, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    e: dict[str, Any] = {"ph": "X", "pid": pid, "tid": tid, "ts": _us(ts), "dur": _us(dur), "name": name}
    if args:
        e["args"] = {k: str(v) for k, v in args.items()}  # TF writes every value as a string
    return e


def host_op(name: str, ts: float, dur: float, tid: int = COMPUTE_TID, **args: Any) -> dict[str, Any]:
    return event(name, HOST_PID, tid, ts, dur, **args)


def api_call(name: str, ts: float, dur: float, correlation: int) -> dict[str, Any]:
    """A CUPTI API call on the host (``cuLaunchKernel``, ``cudaLaunchKernel``, ``cuMemcpy...``)."""
    return event(name, HOST_PID, COMPUTE_TID, ts, dur, correlation_id=correlation, context_id=1)


def gpu_kernel(
    name: str, ts: float, dur: float, correlation: int, stream: int = 14, device: int = 0, occ_pct: float = 50
) -> dict[str, Any]:
    details = f"regs:32 static_shared:0 dynamic_shared:0 grid:1,1,1 block:128,1,1 occ_pct:{occ_pct:g}"
    return event(
        name, gpu_pid(device), stream, ts, dur, correlation_id=correlation, kernel_details=details, group_id=1
    )


def gpu_memcpy(
    direction: str, ts: float, dur: float, correlation: int, nbytes: int, stream: int = 15, device: int = 0
) -> dict[str, Any]:
    details = f"kind_src:pinned kind_dst:device size:{nbytes} dest:0 async:1"
    return event(
        f"Memcpy{direction}",
        gpu_pid(device),
        stream,
        ts,
        dur,
        correlation_id=correlation,
        memcpy_details=details,
    )


def derived(line: str, name: str, ts: float, dur: float, device: int = 0) -> dict[str, Any]:
    return event(name, gpu_pid(device), DERIVED_LINES[line], ts, dur)


def metadata(devices: tuple[int, ...] = (0,), streams: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """process/thread names and sort indices of the host plane and each GPU plane."""
    streams = streams or {14: "Compute", 15: "MemcpyH2D"}
    out: list[dict[str, Any]] = [
        {"ph": "M", "pid": HOST_PID, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": HOST_PID, "name": "process_sort_index", "args": {"sort_index": HOST_PID}},
        {"ph": "M", "pid": HOST_PID, "tid": PYTHON_TID, "name": "thread_name", "args": {"name": "python3"}},
        {
            "ph": "M",
            "pid": HOST_PID,
            "tid": COMPUTE_TID,
            "name": "thread_name",
            "args": {"name": "tf_Compute"},
        },
    ]
    for dev in devices:
        pid = gpu_pid(dev)
        out.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": f"/device:GPU:{dev}"}})
        out.append({"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}})
        lines = {tid: f"Stream #{tid}({what})" for tid, what in streams.items()} | {
            tid: line for line, tid in DERIVED_LINES.items()
        }
        for i, (tid, name) in enumerate(lines.items()):
            out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": name}})
            out.append(
                {"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": i}}
            )
    return out


def encode(events: list[dict[str, Any]], end_marker: bool = True) -> bytes:
    """The document as TF writes it: header, events, then ``{}`` (TF 2.x before xprof)."""
    body = b",".join(orjson.dumps(e) for e in [*events, *([{}] if end_marker else [])])
    return b'{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[' + body + b"]}"


def write_trace(path: Path, events: list[dict[str, Any]], end_marker: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(encode(events, end_marker)))
    return path


def one_step(device: int = 0) -> list[dict[str, Any]]:
    """One training step on GPU ``device``; the figures the tests expect are in ``EXPECTED``.

    memcpy 100-104 (launch call ends 97: 3 µs), kernel sgemm 110-130 (call ends 104: 6 µs), kernel
    relu 135-140 (call ends 107: 28 µs); the derived lines span 95-145 and 110-140 over them.
    """
    return [
        *metadata((device,)),
        host_op("train", 90, 60, tid=PYTHON_TID, step_num=0, _r=1),
        host_op("MatMul", 100, 10),
        api_call("cuMemcpyHtoDAsync_v2", 95, 2, correlation=100),
        api_call("cuLaunchKernel", 101, 3, correlation=101),
        api_call("cudaLaunchKernel", 105, 2, correlation=102),
        gpu_memcpy("H2D", 100, 4, correlation=100, nbytes=4096, device=device),
        gpu_kernel("volta_sgemm_128x64_nn", 110, 20, correlation=101, occ_pct=50, device=device),
        gpu_kernel("relu_kernel", 135, 5, correlation=102, occ_pct=25, device=device),
        derived("Steps", "0", 95, 50, device=device),
        derived("XLA Ops", "fusion.1", 110, 30, device=device),
        derived("TensorFlow Ops", "MatMul", 110, 30, device=device),
    ]


__all__ = [
    "DERIVED_LINES",
    "HOST_PID",
    "api_call",
    "derived",
    "encode",
    "event",
    "gpu_kernel",
    "gpu_memcpy",
    "gpu_pid",
    "host_op",
    "metadata",
    "one_step",
    "write_trace",
]
