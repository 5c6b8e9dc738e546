"""Read a Kineto trace the way PyTorch's TensorBoard profiler plugin reads it, into columns.

The plugin's views rest on details the columnar ``EventStore`` does not keep: the exact category
(``python`` is not ``python_function``), the order of ``traceEvents`` (ties in ``ts`` keep it), the
``External id`` that ties a launch to its operator, ``Input Dims``, launch geometry and the
per-record bytes of ``[memory]`` events. So these views decode the document once more, with
structs that take only those fields (``msgspec.Raw`` keeps shapes and grids undecoded), and type
each event as the plugin does (``docs/analysis.md``, "TensorBoard views"; the contract:
``../shared/oracle/README.md``, "How the plugin reads a trace").

What comes out is columns, not objects: each slice's structs are turned into numbers and dropped
(the document's memory goes with them; a kept ``Raw`` would hold its whole slice): 41 bytes per
event, 38 more per kernel, 28 per host range, 44 per memory record. Every value the plugin compares
or groups by (names, threads, External ids and correlations, shapes, grids, module ids, addresses)
becomes a dense ``int32`` code into a ``Codes`` table, in order of first sight, with Python's dict
equality (``1 == 1.0``), so a group-by is a ``bincount`` and a join an array lookup. Columns only
some events use live in side tables indexed by ``aux``: ``kernel`` for kernels (device, geometry,
occupancy), ``attrs`` for host ranges (shape, module and Python ids, step number).

A field of an unexpected type costs that event, not the document: a slice the typed decoder
refuses is decoded event by event (``_each_alone``: ``"args": null`` reads as no arguments).
Values are coded in C (``Codes.lookup``, a dict lookup per value) and only ``Input type`` of the
collectives is decoded (a list per operator otherwise); ``docs/analysis.md`` has the figures.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from profilerhub_analysis import scratch
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
    input_type: msgspec.Raw = msgspec.field(name="Input type", default=_RAW_NONE)  # read for collectives only
    total_allocated: Any = msgspec.field(name="Total Allocated", default=None)
    total_reserved: Any = msgspec.field(name="Total Reserved", default=None)


_NO_ARGS = _Args()


class Event(msgspec.Struct, gc=False):
    """One event as decoded (kept only while its slice is turned into columns)."""

    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: _Args = _NO_ARGS


class _Doc(msgspec.Struct):
    traceEvents: list[Event] = []  # noqa: N815 - the format's own key
    deviceProperties: Any = None  # noqa: N815


class _LooseDoc(msgspec.Struct):
    traceEvents: list[msgspec.Raw] = []  # noqa: N815
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
HOST_TYPES = (T.OPERATOR, T.STEP, T.PYTHON, T.MODULE, T.ANNOTATION)
"""Events with a row in ``attrs`` (shape, ids, step)."""

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


class _Index(dict[Any, int]):
    """A ``Codes`` table's index, where a value not in it yet gets the next code: so ``index[v]``
    (``Codes.lookup``) codes a hashable value without a Python call unless the value is new."""

    __slots__ = ("seen",)

    def __init__(self, seen: list[Any]) -> None:
        super().__init__()
        self.seen = seen  # the table's values, in order of code

    def __missing__(self, key: Any) -> int:
        code = self[key] = len(self.seen)
        self.seen.append(key)
        return code


class Codes:
    """Values to dense codes in order of first sight, with dict equality (``1 == 1.0 == True``);
    a value that cannot be hashed (a list where a number belongs) gets a code of its own per ``repr``
    (``code``; ``lookup`` raises ``TypeError`` for it)."""

    __slots__ = ("index", "lookup", "values")

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.index: dict[Any, int] = _Index(self.values)
        #: ``code`` of a hashable value, in C.
        self.lookup: Callable[[Any], int] = self.index.__getitem__

    def code(self, value: Any) -> int:
        try:
            got = self.index.get(value)
        except TypeError:
            key = ("~unhashable", repr(value))
            got = self.index.get(key)
            if got is None:
                got = self.index[key] = len(self.values)
                self.values.append(value)
            return got
        if got is None:
            got = self.index[value] = len(self.values)
            self.values.append(value)
        return got

    def __len__(self) -> int:
        return len(self.values)


# Kinds of a numeric argument (``blocks per SM``, ``est. achieved occupancy %``), since the plugin's
# tests differ on bools: absent or another type, a bool, an int or float.
NO_NUMBER, BOOL, NUMBER = 0, 1, 2

_KERNEL_COLS = ("device", "grid", "block", "regs", "smem", "bps", "bps_kind", "occ", "occ_kind")
_ATTR_COLS = ("dims", "module", "pyid", "pyparent", "step", "input_type")
_MEM_COLS = ("ts", "tid", "device", "nbytes", "allocated", "reserved", "addr")
_EVENT_COLS = ("types", "ts", "end", "name", "pid", "tid", "ext", "corr", "aux")
_DTYPES = {"types": np.int8, "ts": np.float64, "end": np.float64, "bps": np.float64, "occ": np.float64,
           "bps_kind": np.int8, "occ_kind": np.int8, "step": np.int64, "nbytes": np.float64,
           "allocated": np.float64, "reserved": np.float64}  # fmt: skip


@dataclass
class TbTrace:
    """The typed events in the plugin's order (stable sort by ``ts``), as columns.

    Per event (``_EVENT_COLS``): ``types`` (``T``), ``ts``/``end`` (µs), codes ``name`` (into
    ``names``), ``pid``/``tid`` (``pids``/``tids``), ``ext``/``corr`` (External id and correlation,
    both into ``ids``: equal codes are equal ids; ``None`` has a code too), and ``aux``: the row of
    the event in ``kernel`` (kernels) or ``attrs`` (``HOST_TYPES``), -1 for the others.
    ``kernel``: ``device``, ``regs``, ``smem`` (into ``values``), ``grid``, ``block`` (raw JSON,
    into ``raws``), ``bps``/``occ`` and their kinds. ``attrs``: ``dims`` (raw JSON of the input
    shapes, into ``raws``), ``module``/``pyid``/``pyparent`` (into ``values``), ``step`` (the N of
    ``ProfilerStep#N``, -1 else), ``input_type`` (into ``input_types``, collectives only, -1 else).
    ``memory``: the ``[memory]`` records sorted by ts (``tid`` into ``tids``, ``device`` into
    ``mem_devices``, ``addr`` into ``values``; ``allocated``/``reserved`` NaN where absent).
    ``python``: ``pyid``/``pyparent`` of the ``python_function`` events that are not modules: no
    view reads them, the module view's hierarchy walks through them (``modules.py``).
    """

    types: np.ndarray = field(default_factory=lambda: np.empty(0, np.int8))
    ts: np.ndarray = field(default_factory=lambda: np.empty(0))
    end: np.ndarray = field(default_factory=lambda: np.empty(0))
    name: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    pid: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    tid: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    ext: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    corr: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    aux: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    kernel: dict[str, np.ndarray] = field(default_factory=dict)
    attrs: dict[str, np.ndarray] = field(default_factory=dict)
    memory: dict[str, np.ndarray] = field(default_factory=dict)
    python: dict[str, np.ndarray] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    pids: list[Any] = field(default_factory=list)
    tids: list[Any] = field(default_factory=list)
    ids: list[Any] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    raws: list[bytes] = field(default_factory=list)
    mem_devices: list[str | None] = field(default_factory=list)
    input_types: list[Any] = field(default_factory=list)
    skipped: int = 0
    device_properties: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ts)


_NUMBER = (int, float)


def _number(value: Any) -> Any:
    """``value`` if it is a finite int or float (not a bool), else ``None``."""
    if type(value) in _NUMBER and value == value and value not in (math.inf, -math.inf):
        return value
    return None


def _kind(value: Any) -> tuple[float, int]:
    if type(value) is bool:
        return float(value), BOOL
    if type(value) in _NUMBER:
        return float(value), NUMBER
    return 0.0, NO_NUMBER


def raw_value(raw: bytes) -> Any:
    """The JSON value a raw field held (``None`` when the field was absent)."""
    return msgspec.json.decode(raw) if len(raw) else None


def _device_name(args: _Args) -> str | None:
    if args.device_type == 0:
        return "CPU"
    if args.device_type == 1:
        return f"GPU{args.device_id}"
    return None


class _Builder:
    """Turns batches of ``Event`` into columns (``add``), then sorts them (``finish``)."""

    def __init__(self) -> None:
        self.names, self.pids, self.tids, self.ids = Codes(), Codes(), Codes(), Codes()
        self.values, self.raws, self.mem_devices = Codes(), Codes(), Codes()
        self.raws.code(b"")  # code 0: absent
        self.input_types: list[Any] = []
        #: The event, kernel and host-range columns: file-backed once large (``scratch``).
        self.parts = scratch.ColumnParts()
        self.mem_parts: dict[str, list[np.ndarray]] = {k: [] for k in _MEM_COLS}
        self.python: tuple[list[int], list[int]] = ([], [])
        self.n_kernels = self.n_attrs = 0
        self.skipped = 0
        self.kind_of: dict[Any, T | None] = {}

    def _kind_of(self, cat: str) -> T | None:
        got = self.kind_of.get(cat, 0)
        if got == 0:
            got = _CATEGORY.get(cat) or _CATEGORY.get(cat.lower())
            if got is None and cat.lower() == "python_function":
                got = T.MODULE  # decided per event: a module only with a module id
            self.kind_of[cat] = got
        return got  # type: ignore[return-value]

    def add(self, events: list[Any]) -> None:
        """Turn a batch of events into columns. Values are coded in C (``Codes.lookup``); a batch
        holding a value that cannot be hashed is turned again with ``Codes.code`` for every value
        (``_add`` keeps nothing of a batch it did not finish; the tables' order of first sight is
        the same either way)."""
        try:
            self._add(events, fast=True)
        except TypeError:
            self._add(events, fast=False)

    def _add(self, events: list[Any], fast: bool) -> None:  # noqa: C901, PLR0912, PLR0915 - one pass per event, kept flat for speed
        cols: dict[str, list[Any]] = {k: [] for k in (*_EVENT_COLS, *_KERNEL_COLS, *_ATTR_COLS)}
        mem: dict[str, list[Any]] = {k: [] for k in _MEM_COLS}
        e_types, e_ts, e_end, e_name = cols["types"], cols["ts"], cols["end"], cols["name"]
        e_pid, e_tid, e_ext, e_corr, e_aux = cols["pid"], cols["tid"], cols["ext"], cols["corr"], cols["aux"]
        how = attrgetter("lookup" if fast else "code")
        name_code, pid_code, tid_code, id_code = map(how, (self.names, self.pids, self.tids, self.ids))
        value_code, raw_code, device_code = map(how, (self.values, self.raws, self.mem_devices))
        py_ids: list[int] = []
        py_parents: list[int] = []
        input_types: list[Any] = []
        skipped = 0
        for ev in events:
            ts = ev.ts
            name = ev.name
            if type(ts) not in _NUMBER or type(name) is not str or _number(ts) is None:
                skipped += 1
                continue
            args = ev.args
            ph = ev.ph
            if ph == "i":
                if name == "[memory]":
                    mem["ts"].append(ts)
                    mem["tid"].append(tid_code(ev.tid))
                    mem["device"].append(device_code(_device_name(args)))
                    mem["nbytes"].append(_number(args.nbytes) or 0)
                    allocated, reserved = _number(args.total_allocated), _number(args.total_reserved)
                    mem["allocated"].append(math.nan if allocated is None else allocated)
                    mem["reserved"].append(math.nan if reserved is None else reserved)
                    mem["addr"].append(value_code(args.addr))
                continue
            cat = ev.cat
            if ph != "X" or type(cat) is not str:
                continue
            kind = self._kind_of(cat)
            if kind is None:
                continue
            if kind == T.MODULE and args.module_id is None:
                if args.python_id is not None:
                    py_ids.append(value_code(args.python_id))
                    py_parents.append(value_code(args.python_parent_id))
                continue
            dur = _number(ev.dur)
            if dur is None:
                skipped += 1
                continue
            step = -1
            if (kind == T.OPERATOR or kind == T.ANNOTATION) and name.startswith("ProfilerStep#"):
                try:
                    step = int(name.split("#")[1])
                except ValueError:
                    skipped += 1
                    continue
                kind = T.STEP
            e_types.append(kind)
            e_ts.append(ts)
            e_end.append(ts + dur)
            e_name.append(name_code(name))
            e_pid.append(pid_code(ev.pid))
            e_tid.append(tid_code(ev.tid))
            e_ext.append(id_code(args.ext_lower if args.ext_lower is not None else args.ext))
            e_corr.append(id_code(args.correlation))
            if kind == T.KERNEL:
                e_aux.append(self.n_kernels + len(cols["device"]))
                cols["device"].append(value_code(args.device))
                cols["grid"].append(raw_code(bytes(args.grid)))
                cols["block"].append(raw_code(bytes(args.block)))
                cols["regs"].append(value_code(args.regs))
                cols["smem"].append(value_code(args.shared_memory))
                v, k = _kind(args.blocks_per_sm)
                cols["bps"].append(v)
                cols["bps_kind"].append(k)
                v, k = _kind(args.occupancy)
                cols["occ"].append(v)
                cols["occ_kind"].append(k)
            elif kind in HOST_TYPES:
                e_aux.append(self.n_attrs + len(cols["dims"]))
                cols["dims"].append(raw_code(bytes(args.dims if len(args.dims) else args.dims_lower)))
                cols["module"].append(value_code(args.module_id))
                cols["pyid"].append(value_code(args.python_id))
                cols["pyparent"].append(value_code(args.python_parent_id))
                cols["step"].append(step)
                if name in COLLECTIVES:
                    cols["input_type"].append(len(self.input_types) + len(input_types))
                    input_types.append(raw_value(bytes(args.input_type)))
                else:
                    cols["input_type"].append(-1)
            else:
                e_aux.append(-1)
        self.n_kernels += len(cols["device"])
        self.n_attrs += len(cols["dims"])
        self.skipped += skipped
        self.python[0].extend(py_ids)
        self.python[1].extend(py_parents)
        self.input_types += input_types
        for key, col in cols.items():
            self.parts.add(key, np.asarray(col, dtype=_DTYPES.get(key, np.int32)))
        for key, col in mem.items():
            self.mem_parts[key].append(np.asarray(col, dtype=_DTYPES.get(key, np.int32)))

    def finish(self, props: Any) -> TbTrace:
        def cat(parts: list[np.ndarray], key: str) -> np.ndarray:
            return np.concatenate(parts) if parts else np.empty(0, dtype=_DTYPES.get(key, np.int32))

        def column(key: str) -> np.ndarray:
            return self.parts.column(key, _DTYPES.get(key, np.int32))

        out = TbTrace(
            kernel={k: column(k) for k in _KERNEL_COLS},
            attrs={k: column(k) for k in _ATTR_COLS},
            python={"pyid": np.asarray(self.python[0], np.int32),
                    "pyparent": np.asarray(self.python[1], np.int32)},
            names=self.names.values, pids=self.pids.values, tids=self.tids.values, ids=self.ids.values,
            values=self.values.values, raws=self.raws.values, mem_devices=self.mem_devices.values,
            input_types=self.input_types, skipped=self.skipped,
        )  # fmt: skip
        order = np.argsort(column("ts"), kind="stable")  # ties keep the document's order
        for k in _EVENT_COLS:
            setattr(out, k, scratch.take(column(k), order))  # in chunks, file-backed when large
        del order
        self.parts.close()
        mem = {k: cat(self.mem_parts.pop(k), k) for k in _MEM_COLS}
        order = np.argsort(mem["ts"], kind="stable")
        out.memory = {k: v[order] for k, v in mem.items()}
        if isinstance(props, list):
            out.device_properties = [p for p in props if isinstance(p, dict)]
        return out


TB_DIALECT = Dialect(False, msgspec.json.Decoder(_Doc), msgspec.json.Decoder(list[Event]), Event)
"""How the streamed reader decodes these events (``parse_chunks``)."""


_EVENT = msgspec.json.Decoder(Event)


def _each_alone(raw: list[msgspec.Raw]) -> tuple[list[Event], int]:
    """The events of a slice the typed decoder refused, each decoded alone (typed: shapes and
    grids stay raw), and how many were skipped. What it refuses is an event that is no object or
    whose ``args`` is none: ``"args": null`` is read as no arguments (as the main reader reads it),
    another ``args`` costs its event."""
    events, skipped = [], 0
    for r in raw:
        try:
            events.append(_EVENT.decode(r))
            continue
        except msgspec.ValidationError:
            loose = msgspec.json.decode(r)
        if isinstance(loose, dict) and "args" in loose and loose["args"] is None:
            events.append(msgspec.convert({k: v for k, v in loose.items() if k != "args"}, Event))
        else:
            skipped += 1
    return events, skipped


def parse_chunks(chunks: Iterable[bytes]) -> TbTrace:
    """``parse`` of a document arriving in pieces (``reader.file_chunks``), read as a stream
    (``profilerhub_analysis.stream``): the document is never in memory whole, nor its events'
    list; the same trace comes out."""
    builder = _Builder()

    def lenient(raw: list[msgspec.Raw]) -> list[Event]:
        events, skipped = _each_alone(raw)
        builder.skipped += skipped
        return events

    decoded = decode_stream(chunks, "trace", dialect=TB_DIALECT, lenient=lenient)
    for batch in decoded.batches():
        builder.add(batch)
    return builder.finish(decoded.doc.deviceProperties)


def parse(data: bytes | bytearray) -> TbTrace:
    """Decode a (decompressed) Kineto document into the plugin's typed events."""
    builder = _Builder()
    try:
        doc = msgspec.json.decode(data, type=_Doc)
        events = doc.traceEvents
        props = doc.deviceProperties
    except msgspec.ValidationError:
        loose = msgspec.json.decode(data, type=_LooseDoc)
        props = loose.deviceProperties
        events, builder.skipped = _each_alone(loose.traceEvents)
    for i in range(0, len(events), 1 << 16):
        builder.add(events[i : i + (1 << 16)])
    del events
    return builder.finish(props)


__all__ = [
    "BOOL",
    "COLLECTIVES",
    "GPU_TYPES",
    "HOST_TYPES",
    "NUMBER",
    "NO_NUMBER",
    "Codes",
    "Event",
    "T",
    "TbTrace",
    "is_dataloader",
    "parse",
    "parse_chunks",
    "raw_value",
]
