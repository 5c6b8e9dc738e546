"""Read a Kineto trace the way PyTorch's TensorBoard profiler plugin reads it.

The plugin's views rest on details the columnar ``EventStore`` does not keep: the exact category
(``python`` is not ``python_function``), the order of ``traceEvents`` (ties in ``ts`` keep it), the
``External id`` that ties a launch to its operator, ``Input Dims``, launch geometry and the
per-record bytes of ``[memory]`` events. So these views decode the document once more, with
structs that take only those fields (``msgspec.Raw`` keeps shapes and grids undecoded until a row
needs them), and type each event as the plugin does (``docs/analysis.md``, "TensorBoard views";
the contract: ``../shared/oracle/README.md``, "How the plugin reads a trace").

A field of an unexpected type costs that field, not the document: the strict decode falls back to
a generic one and each event is converted on its own.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import msgspec
import numpy as np

from profilerhub_analysis.reader import Dialect
from profilerhub_analysis.stream import decode_stream

_RAW_NONE = msgspec.Raw(b"")


class _Args(msgspec.Struct, frozen=True, gc=False):
    ext_lower: Any = msgspec.field(name="external id", default=None)
    ext: Any = msgspec.field(name="External id", default=None)
    correlation: Any = None
    device: Any = None
    dims: msgspec.Raw = msgspec.field(name="Input Dims", default=_RAW_NONE)
    dims_lower: msgspec.Raw = msgspec.field(name="Input dims", default=_RAW_NONE)
    grid: msgspec.Raw = _RAW_NONE
    block: msgspec.Raw = _RAW_NONE
    regs: Any = msgspec.field(name="registers per thread", default=None)
    shared_memory: Any = msgspec.field(name="shared memory", default=None)
    blocks_per_sm: Any = msgspec.field(name="blocks per SM", default=None)
    occupancy: Any = msgspec.field(name="est. achieved occupancy %", default=None)
    module_id: Any = msgspec.field(name="Python module id", default=None)
    python_id: Any = msgspec.field(name="Python id", default=None)
    python_parent_id: Any = msgspec.field(name="Python parent id", default=None)
    nbytes: Any = msgspec.field(name="Bytes", default=None)
    addr: Any = msgspec.field(name="Addr", default=None)
    device_type: Any = msgspec.field(name="Device Type", default=None)
    device_id: Any = msgspec.field(name="Device Id", default=None)
    call_stack: Any = msgspec.field(name="Call stack", default=None)
    input_type: Any = msgspec.field(name="Input type", default=None)
    total_allocated: Any = msgspec.field(name="Total Allocated", default=None)
    total_reserved: Any = msgspec.field(name="Total Reserved", default=None)


_NO_ARGS = _Args()


class Event(msgspec.Struct, gc=False):
    """One event as decoded; ``_typed`` fills the last four fields of those the plugin uses
    (``ts``/``end`` in µs as written, int or float)."""

    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: _Args = _NO_ARGS
    # Not in the JSON (keys no trace writes): what the plugin makes of the event.
    type: int = msgspec.field(default=0, name="~ph~type")
    end: Any = msgspec.field(default=0.0, name="~ph~end")
    ext: Any = msgspec.field(default=None, name="~ph~ext")
    step: int = msgspec.field(default=-1, name="~ph~step")
    correlation: Any = msgspec.field(default=None, name="~ph~correlation")


class _Doc(msgspec.Struct):
    traceEvents: list[Event] = []  # noqa: N815 - the format's own key
    deviceProperties: Any = None  # noqa: N815


class _LooseDoc(msgspec.Struct):
    traceEvents: list[Any] = []  # noqa: N815
    deviceProperties: Any = None  # noqa: N815


class T(enum.IntEnum):
    """Event types as the plugin assigns them (``trace.py``'s ``EventTypes``)."""

    OPERATOR = 1
    STEP = 2
    RUNTIME = 3
    KERNEL = 4
    MEMCPY = 5
    MEMSET = 6
    PYTHON = 7
    MODULE = 8
    ANNOTATION = 9


GPU_TYPES = (T.KERNEL, T.MEMCPY, T.MEMSET)

_CATEGORY: dict[str, T] = {
    "cpu_op": T.OPERATOR,
    "operator": T.OPERATOR,
    "runtime": T.RUNTIME,
    "cuda_runtime": T.RUNTIME,
    "mtia_runtime": T.RUNTIME,
    "glow_runtime": T.RUNTIME,
    "xpu_runtime": T.RUNTIME,
    "privateuse1_runtime": T.RUNTIME,
    "kernel": T.KERNEL,
    "memcpy": T.MEMCPY,
    "gpu_memcpy": T.MEMCPY,
    "memset": T.MEMSET,
    "gpu_memset": T.MEMSET,
    "python": T.PYTHON,
    "user_annotation": T.ANNOTATION,
    "gpu_user_annotation": T.ANNOTATION,
}

COLLECTIVES = frozenset(
    f"{lib}:{op}"
    for lib in ("nccl", "gloo")
    for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")
)


def is_dataloader(name: str) -> bool:
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) or name.startswith(
        "enumerate(DataPipe)#"
    )


@dataclass(slots=True, eq=False)
class MemoryRecord:
    ts: float
    tid: Any
    device: str | None
    nbytes: float
    allocated: float | None = None
    reserved: float | None = None
    addr: Any = None
    op: str | None = None
    """The operator the plugin's walk attached this record to (``views._attach``), if any."""


@dataclass
class TbTrace:
    """The typed events in the plugin's order (stable sort by ``ts``), and the memory records."""

    events: list[Event] = field(default_factory=list)
    memory: list[MemoryRecord] = field(default_factory=list)
    skipped: int = 0
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    python_functions: list[Event] = field(default_factory=list)
    """``python_function`` events that are not modules: no view reads them, the module view's
    hierarchy walks through them (``modules.py``)."""

    @cached_property
    def types(self) -> np.ndarray:
        return np.fromiter((e.type for e in self.events), dtype=np.int8, count=len(self.events))

    @cached_property
    def ts(self) -> np.ndarray:
        return np.fromiter((e.ts for e in self.events), dtype=np.float64, count=len(self.events))

    @cached_property
    def end(self) -> np.ndarray:
        return np.fromiter((e.end for e in self.events), dtype=np.float64, count=len(self.events))


_NUMBER = (int, float)


def _number(value: Any) -> Any:
    """``value`` if it is a finite int or float (not a bool), else ``None``."""
    if type(value) in _NUMBER and value == value and value not in (math.inf, -math.inf):
        return value
    return None


def raw_value(raw: msgspec.Raw) -> Any:
    """The JSON value a ``Raw`` field held (``None`` when the field was absent)."""
    return msgspec.json.decode(raw) if len(raw) else None


def _device_name(args: _Args) -> str | None:
    if args.device_type == 0:
        return "CPU"
    if args.device_type == 1:
        return f"GPU{args.device_id}"
    return None


def _typed(ev: Event, out: TbTrace) -> None:
    ts = ev.ts
    if type(ts) not in _NUMBER or type(ev.name) is not str or _number(ts) is None:
        out.skipped += 1
        return
    args = ev.args
    ph = ev.ph
    if ph == "i":
        if ev.name == "[memory]":
            nbytes = _number(args.nbytes)
            device = _device_name(args)
            allocated, reserved = _number(args.total_allocated), _number(args.total_reserved)
            out.memory.append(MemoryRecord(ts, ev.tid, device, nbytes or 0, allocated, reserved, args.addr))
        return
    cat = ev.cat
    if ph != "X" or type(cat) is not str:
        return
    kind = _CATEGORY.get(cat) or _CATEGORY.get(cat.lower())
    if kind is None:
        if cat.lower() != "python_function":
            return
        if args.module_id is None:
            if args.python_id is not None:
                out.python_functions.append(ev)
            return
        kind = T.MODULE
    dur = _number(ev.dur)
    if dur is None:
        out.skipped += 1
        return
    if (kind == T.OPERATOR or kind == T.ANNOTATION) and ev.name.startswith("ProfilerStep#"):
        try:
            ev.step = int(ev.name.split("#")[1])
        except ValueError:
            out.skipped += 1
            return
        kind = T.STEP
    ev.type = kind
    ev.end = ts + dur
    ev.ext = args.ext_lower if args.ext_lower is not None else args.ext
    ev.correlation = args.correlation
    out.events.append(ev)


TB_DIALECT = Dialect(False, msgspec.json.Decoder(_Doc), msgspec.json.Decoder(list[Event]), Event)
"""How the streamed reader decodes these events (``parse_chunks``)."""


def parse_chunks(chunks: Iterable[bytes]) -> TbTrace:
    """``parse`` of a document arriving in pieces (``reader.file_chunks``), read as a stream
    (``profilerhub_analysis.stream``): the document is never in memory whole, nor its events'
    list; the same trace comes out."""
    out = TbTrace()

    def lenient(raw: list[msgspec.Raw]) -> list[Any]:  # as parse's fallback: each event alone
        events = []
        for r in raw:
            try:
                events.append(msgspec.convert(msgspec.json.decode(r), Event))
            except msgspec.ValidationError:
                out.skipped += 1
        return events

    decoded = decode_stream(chunks, "trace", dialect=TB_DIALECT, lenient=lenient)
    for batch in decoded.batches():
        events: list[Any] = batch  # TB_DIALECT's: Event
        for ev in events:
            _typed(ev, out)
    props = decoded.doc.deviceProperties
    if isinstance(props, list):
        out.device_properties = [p for p in props if isinstance(p, dict)]
    out.events.sort(key=lambda e: e.ts)  # stable: ties keep the document's order
    out.memory.sort(key=lambda r: r.ts)
    return out


def parse(data: bytes | bytearray) -> TbTrace:
    """Decode a (decompressed) Kineto document into the plugin's typed events."""
    out = TbTrace()
    try:
        doc = msgspec.json.decode(data, type=_Doc)
        events = doc.traceEvents
        props = doc.deviceProperties
    except msgspec.ValidationError:
        loose = msgspec.json.decode(data, type=_LooseDoc)
        props = loose.deviceProperties
        events = []
        for raw in loose.traceEvents:
            try:
                events.append(msgspec.convert(raw, Event))
            except msgspec.ValidationError:
                out.skipped += 1
    if isinstance(props, list):
        out.device_properties = [p for p in props if isinstance(p, dict)]
    for ev in events:
        _typed(ev, out)
    out.events.sort(key=lambda e: e.ts)  # stable: ties keep the document's order
    out.memory.sort(key=lambda r: r.ts)
    return out


__all__ = [
    "COLLECTIVES",
    "GPU_TYPES",
    "Event",
    "MemoryRecord",
    "T",
    "TbTrace",
    "is_dataloader",
    "parse",
    "parse_chunks",
    "raw_value",
]
