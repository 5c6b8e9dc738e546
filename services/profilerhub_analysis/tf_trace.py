"""TensorFlow profiler traces: what their lanes are, and the kind of each event.

TensorBoard's profile plugin exports a run as Chrome-trace JSON (``plugins/profile/<run>/
<host>.trace.json.gz``, or the trace viewer's download): the same phases as a Kineto trace, but no
``cat``, so what an event is follows from where it lies. Each XPlane of the profile is one
process, named in ``process_name`` metadata, and each XLine one thread, named in ``thread_name``:

- ``/host:CPU`` (pid 701; newer exporters prefix the host name: ``vm /host:CPU``): host threads
  (``tf_Compute``, ``python3``, ``tf_data_iterator_get_next``...). CUPTI's API calls lie here too,
  named ``cuLaunchKernel`` (driver) or ``cudaLaunchKernel`` (runtime), with ``correlation_id``.
- ``/device:GPU:<n>`` (pid 1 + n): lines ``Stream #<id>`` (``Stream #14(Compute)``, ``Stream
  #15(MemcpyH2D)``...) hold the GPU work: kernels by kernel name, copies and sets named
  ``Memcpy*`` / ``Memset*``, each with ``correlation_id`` and ``memcpy_details`` /
  ``memset_details`` (``... size:1024 ...``, ``... num_bytes:64 ...``). Every other line of the
  plane is derived (``Steps``, ``XLA Modules``, ``XLA Ops``, ``TensorFlow Ops``, ``TensorFlow Name
  Scope``, ``Source code``, ``Launch Stats``): spans over the kernels, drawn on the GPU lanes as
  ``GPU_USER_ANNOTATION`` but never GPU work, so GPU time is not counted twice.
- ``/device:TPU:<n>`` planes are refused (``TraceFormatError``): their lines follow no CUDA
  model. Events of other planes (another device kind, TF's own metadata planes) are ``OTHER``,
  on thread lanes under their process name.

A host event with a ``step_num`` argument is a step marker (``tf.profiler.experimental.Trace(
"train", step_num=3, _r=1)``, which Keras' ``fit`` also writes): a ``USER_ANNOTATION`` named
``"<name> <step>"``, as newer exporters already name it (``train 3``), so ``steps`` finds them.

Argument values are JSON strings in most TF versions (``"correlation_id": "123"``), numbers in
newer ones; both are read. The classification runs once per distinct lane and distinct name; the
per-event work is numpy indexing.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from profilerhub_analysis.errors import TraceFormatError
from profilerhub_analysis.events import Metadata
from profilerhub_analysis.store import Kind

HOST_PLANE = re.compile(r"(?:^|\s)/host:CPU\b")
DEVICE_PLANE = re.compile(r"(?:^|\s)/device:([A-Za-z_]+):(\d+)\b")
STREAM_LINE = re.compile(r"^Stream #(\d+)")
_DRIVER_CALL = re.compile(r"^cu[A-Z]")
_RUNTIME_CALL = re.compile(r"^cuda[A-Z]")
_OCCUPANCY = re.compile(r"(?:^|\s)occ_pct:(\d+(?:\.\d+)?)")
_COPY_BYTES = re.compile(r"(?:^|\s)(?:size|num_bytes):(\d+)")

#: What a lane (pid, tid) of a TensorFlow trace is.
LINE_HOST, LINE_STREAM, LINE_DERIVED, LINE_OTHER = 0, 1, 2, 3


class Planes:
    """The processes (planes) and threads (lines) of one TensorFlow trace, from its metadata."""

    def __init__(self, meta_events: list[Metadata], source: str = "trace") -> None:
        #: pid -> GPU ordinal, for the ``/device:GPU:<n>`` planes.
        self.gpu: dict[int, int] = {}
        self.host: set[int] = set()
        self.lines: dict[tuple[int, int], str] = {}
        for e in meta_events:  # one per process/thread
            if not isinstance(e.pid, int) or not e.args.name:
                continue
            if e.name == "process_name":
                device = DEVICE_PLANE.search(e.args.name)
                if HOST_PLANE.search(e.args.name):
                    self.host.add(e.pid)
                elif device and device.group(1) == "GPU":
                    self.gpu[e.pid] = int(device.group(2))
                elif device and device.group(1) == "TPU":
                    raise TraceFormatError(
                        f"{source}: a TensorFlow trace of {device.group(0).strip()}; ProfilerHub reads "
                        "TensorFlow traces of CPU hosts and NVIDIA GPUs only"
                    )
            elif e.name == "thread_name" and isinstance(e.tid, int):
                self.lines[(e.pid, e.tid)] = e.args.name.strip()

    def line_kind(self, pid: Any, tid: Any) -> int:
        """``LINE_*`` of one (pid, tid)."""
        if pid in self.gpu:
            return LINE_STREAM if STREAM_LINE.match(self.lines.get((pid, tid), "")) else LINE_DERIVED
        return LINE_HOST if pid in self.host else LINE_OTHER

    def stream(self, pid: Any, tid: Any) -> int:
        """The CUDA stream of a ``Stream #<id>`` line, else -1."""
        m = STREAM_LINE.match(self.lines.get((pid, tid), "")) if pid in self.gpu else None
        return int(m.group(1)) if m else -1


def planes(meta_events: list[Metadata], source: str = "trace") -> Planes | None:
    """The planes when the metadata names TensorFlow's (``/host:CPU``, ``/device:GPU:0``), else None.

    Raises ``TraceFormatError`` for a TensorFlow trace of TPUs (other device planes are read as
    ``other`` events).
    """
    names = [e.args.name for e in meta_events if e.name == "process_name" and e.args.name]
    if any(HOST_PLANE.search(n) or DEVICE_PLANE.search(n) for n in names):
        return Planes(meta_events, source)
    return None


def _name_kinds(names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct name: its kind on a stream line and on the host."""
    on_stream = np.full(max(len(names), 1), int(Kind.KERNEL), dtype=np.int8)
    on_host = np.full(max(len(names), 1), int(Kind.CPU_OP), dtype=np.int8)
    for i, name in enumerate(names):  # once per distinct name
        if name.startswith("Memcpy"):
            on_stream[i] = Kind.MEMCPY
        elif name.startswith("Memset"):
            on_stream[i] = Kind.MEMSET
        if _RUNTIME_CALL.match(name):
            on_host[i] = Kind.RUNTIME
        elif _DRIVER_CALL.match(name):
            on_host[i] = Kind.DRIVER
    return on_stream, on_host


def classify(
    tf: Planes,
    lane_keys: list[tuple[Any, Any]],
    lane_of_event: np.ndarray,
    names: list[str],
    name_id: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kind, stream, on a GPU plane) of each event, from its lane (``lane_keys[lane_of_event]``,
    the distinct (pid, tid) pairs) and its name."""
    line = np.array([tf.line_kind(p, t) for p, t in lane_keys] or [LINE_OTHER], dtype=np.int8)
    streams = np.array([tf.stream(p, t) for p, t in lane_keys] or [-1], dtype=np.int64)
    on_stream, on_host = _name_kinds(names)
    ev_line = line[lane_of_event]
    kind = np.full(len(name_id), int(Kind.OTHER), dtype=np.int8)
    for value, sel in (
        (on_stream[name_id], ev_line == LINE_STREAM),
        (on_host[name_id], ev_line == LINE_HOST),
        (np.int8(Kind.GPU_USER_ANNOTATION), ev_line == LINE_DERIVED),
    ):
        kind = np.where(sel, value, kind)
    gpu = (ev_line == LINE_STREAM) | (ev_line == LINE_DERIVED)
    return kind.astype(np.int8), streams[lane_of_event], gpu


def step_markers(
    kind: np.ndarray, name_id: np.ndarray, step: np.ndarray, names: dict[str, int]
) -> tuple[np.ndarray, np.ndarray]:
    """(kind, name_id) with the host events that carry a step number turned into step markers:
    ``USER_ANNOTATION`` named ``"<name> <step>"``. ``names`` interns new names (name -> id)."""
    rows = np.flatnonzero((step >= 0) & (kind == Kind.CPU_OP))
    if not len(rows):
        return kind, name_id
    by_id = list(names)
    pairs, which = np.unique(np.stack([name_id[rows], step[rows]], axis=1), axis=0, return_inverse=True)
    labels = []
    for nid, number in pairs.tolist():  # once per marker name and step
        name = by_id[nid]
        labels.append(names[name if name.endswith(f" {number}") else f"{name} {number}"])
    kind, name_id = kind.copy(), name_id.copy()
    kind[rows] = Kind.USER_ANNOTATION
    name_id[rows] = np.array(labels, dtype=name_id.dtype)[which.reshape(-1)]
    return kind, name_id


def _numbers(details: list[str | None], pattern: re.Pattern[str], dtype: Any, absent: Any) -> np.ndarray:
    """``pattern``'s number in each distinct details string (``absent`` where none)."""
    out = np.full(max(len(details), 1), absent, dtype=dtype)
    for i, value in enumerate(details):  # once per distinct string
        m = pattern.search(value) if value else None
        if m:
            out[i] = float(m.group(1))
    return out


def occupancy_lut(kernel_details: list[str | None]) -> np.ndarray:
    """``occ_pct`` of each distinct ``kernel_details`` string, -1 where absent."""
    return _numbers(kernel_details, _OCCUPANCY, np.float32, -1.0)


def bytes_lut(copy_details: list[str | None]) -> np.ndarray:
    """``size`` / ``num_bytes`` of each distinct ``memcpy_details`` / ``memset_details``, else -1."""
    return _numbers(copy_details, _COPY_BYTES, np.int64, -1)


def int_values(values: list[int | str | None]) -> np.ndarray:
    """Integers written as numbers or as strings (``"123"``); -1 where absent or not a number."""
    arr = np.array(values, dtype=object)
    out = np.full(len(arr), -1, dtype=np.int64)
    present = np.flatnonzero(arr != None)  # noqa: E711 - elementwise over an object array
    if len(present):
        try:
            out[present] = arr[present].astype(str).astype(np.int64)
        except (ValueError, OverflowError):  # an odd value somewhere: value by value
            out[present] = [int(v) if str(v).lstrip("-").isdigit() else -1 for v in arr[present]]
    return out


__all__ = [
    "DEVICE_PLANE",
    "HOST_PLANE",
    "STREAM_LINE",
    "Planes",
    "bytes_lut",
    "classify",
    "int_values",
    "occupancy_lut",
    "planes",
    "step_markers",
]
