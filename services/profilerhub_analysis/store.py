"""The event store: one trace turned once into columnar Arrow tables.

This is the contract between the reader (which builds it), the analyses, the timeline and the
ingest worker (which saves it through the storage interface). Keep it stable: add columns, never
rename or re-type one.

``EventStore.events`` (pyarrow Table), one row per complete (``ph: "X"``) event, sorted by
``(lane_id, ts_ns)``; row positions are the event indices used by ``launch``:

============  =======  =========================================================================
column        type     meaning
============  =======  =========================================================================
ts_ns         int64    start, integer ns in the trace's own time base (``ts`` µs × 1000; float
                       µs are rounded to the nearest ns, integer µs are exact). Add
                       ``meta.base_time_ns`` (when not None) for wall-clock epoch ns.
dur_ns        int64    duration in ns (>= 0)
name_id       int32    index into ``names``
kind          int8     ``Kind`` below (from the event's ``cat``, current and legacy spellings)
lane_id       int32    index into ``lanes``
correlation   int64    ``args.correlation`` (-1 when absent)
bytes         int64    ``args.bytes`` (memcpy/memset; -1 when absent)
stream        int64    ``args.stream`` when it is an integer (-1 otherwise; ROCm's "0x0" -> 0)
device        int32    GPU events: the device (their ``pid``; the number in a label pid); CPU: -1
launch        int64    GPU ops (kernel, memcpy, memset): row of the CPU event with the same
                       ``args.correlation`` (runtime/driver launch call); -1 when none
bandwidth     float32  ``args."memory bandwidth (GB/s)"`` (Kineto's figure on memcpy/memset); -1
                       when absent
blocks_per_sm float32  ``args."blocks per SM"`` (kernels); -1 when absent
occupancy     float32  ``args."est. achieved occupancy %"`` (kernels); -1 when absent
============  =======  =========================================================================

Stores saved before a column existed load with it filled with its "absent" value.

``names``: pyarrow string array of interned event names.

``lanes`` (pyarrow Table), row = ``lane_id``: ``kind`` string (``cpu_thread`` | ``gpu_stream`` |
``other``), ``pid`` int64, ``tid`` int64 (the CPU thread id, or the GPU stream), ``device`` int32
(-1 for CPU lanes), ``name`` string (display name), ``sort`` int64 (ascending = top to bottom; from
the trace's ``process_sort_index``/``thread_sort_index`` metadata when present). String pids/tids
(Kineto's ``"Spans"`` row) get ``pid``/``tid`` -1 and lane kind ``other``.

``counters`` (pyarrow Table): ``name`` string, ``ts_ns`` int64, ``value`` float64, sorted by
(name, ts_ns). From ``ph: "C"`` events (one series per ``name`` + arg key) and PyTorch's
``[memory]`` instant events (``memory allocated/reserved (<device>)`` in bytes).

``meta`` (``TraceMeta``): source, total event count, counts per phase, skipped events by reason,
time base, device properties, distributed info and rank.

The tables are Arrow views built on first access over numpy columns (zero-copy), so code that only
analyses (``col()``, ``name_list``, ``lane_column()``) never imports pyarrow. Build a store from
Arrow tables with ``EventStore.from_tables``.

Save/load: ``to_dir``/``from_dir`` (a plain directory of Parquet files plus ``meta.json``),
``to_files``/``from_files`` (the same as a ``{file name: bytes}`` mapping, for object storage) and
``to_bytes``/``from_bytes`` (one uncompressed zip of those files).
"""

from __future__ import annotations

import enum
import io
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

FORMAT_VERSION = 1


class Kind(enum.IntEnum):
    """What an event is, from its category (``cat``)."""

    OTHER = 0
    CPU_OP = 1
    USER_ANNOTATION = 2
    GPU_USER_ANNOTATION = 3
    RUNTIME = 4
    DRIVER = 5
    KERNEL = 6
    MEMCPY = 7
    MEMSET = 8
    PYTHON_FUNCTION = 9
    CUDA_SYNC = 10
    TRACE_SPAN = 11


#: Kinds that are GPU work ("GPU ops"): what temporal breakdown, kernel kinds and launch latency use.
GPU_OP_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
#: Kinds drawn on GPU stream lanes.
GPU_LANE_KINDS = (*GPU_OP_KINDS, Kind.GPU_USER_ANNOTATION, Kind.CUDA_SYNC)

LANE_KINDS = ("cpu_thread", "gpu_stream", "other")

#: (column, numpy dtype, arrow type name) of the events table, in order.
EVENT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("ts_ns", "int64", "int64"),
    ("dur_ns", "int64", "int64"),
    ("name_id", "int32", "int32"),
    ("kind", "int8", "int8"),
    ("lane_id", "int32", "int32"),
    ("correlation", "int64", "int64"),
    ("bytes", "int64", "int64"),
    ("stream", "int64", "int64"),
    ("device", "int32", "int32"),
    ("launch", "int64", "int64"),
    ("bandwidth", "float32", "float32"),
    ("blocks_per_sm", "float32", "float32"),
    ("occupancy", "float32", "float32"),
)
#: Columns added after format 1, with the value an older store gets for them.
LATER_COLUMNS: dict[str, float] = {"bandwidth": -1.0, "blocks_per_sm": -1.0, "occupancy": -1.0}
LANE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("kind", "object", "string"),
    ("pid", "int64", "int64"),
    ("tid", "int64", "int64"),
    ("device", "int32", "int32"),
    ("name", "object", "string"),
    ("sort", "int64", "int64"),
)
COUNTER_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("name", "object", "string"),
    ("ts_ns", "int64", "int64"),
    ("value", "float64", "float64"),
)


def arrow_schema(columns: tuple[tuple[str, str, str], ...]) -> pa.Schema:
    """The Arrow schema of one of the column specs above (imports pyarrow)."""
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, arrow)()) for name, _, arrow in columns])


class TraceMeta(msgspec.Struct, kw_only=True):
    """What the store knows about the trace as a whole."""

    source: str = ""
    #: ``len(traceEvents)``: every phase (M, i, s/f, C, ...) included.
    events_total: int = 0
    #: ``{"X": n, "M": n, ...}``
    phases: dict[str, int] = msgspec.field(default_factory=dict)
    #: Events left out, by reason (``"X event without dur"``, ``"malformed event"``, ...).
    skipped: dict[str, int] = msgspec.field(default_factory=dict)
    #: ``baseTimeNanoseconds`` when the trace has it: ts_ns + base_time_ns = epoch ns.
    base_time_ns: int | None = None
    #: "int" when every timestamp was an integer µs (2021-23 traces), "float" otherwise.
    ts_type: str = "int"
    device_properties: list[Any] = msgspec.field(default_factory=list)
    distributed_info: dict[str, Any] | None = None
    rank: int | None = None
    schema_version: Any = None
    trace_name: str | None = None
    #: What wrote the trace: "kineto" (PyTorch's profiler, and Chrome traces in its shape) or
    #: "tensorflow" (TensorBoard's profile plugin; kinds then come from its planes and lines).
    producer: str = "kineto"
    format_version: int = FORMAT_VERSION


Columns = dict[str, np.ndarray]


def empty_columns(spec: tuple[tuple[str, str, str], ...]) -> Columns:
    return {name: np.zeros(0, dtype=dtype) for name, dtype, _ in spec}


def _to_arrow(columns: Columns, spec: tuple[tuple[str, str, str], ...]) -> pa.Table:
    import pyarrow as pa

    schema = arrow_schema(spec)
    arrays = [
        pa.array(columns[name].tolist() if dtype == "object" else columns[name], schema.field(name).type)
        for name, dtype, _ in spec
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _from_arrow(table: pa.Table, spec: tuple[tuple[str, str, str], ...]) -> Columns:
    out: Columns = {}
    for name, dtype, _ in spec:
        if name not in table.column_names and name in LATER_COLUMNS:
            out[name] = np.full(table.num_rows, LATER_COLUMNS[name], dtype=dtype)
            continue
        column = table.column(name)
        if dtype == "object":
            out[name] = np.array(column.to_pylist(), dtype=object)
        else:
            out[name] = column.to_numpy().astype(dtype, copy=False)
    return out


class EventStore:
    """A trace as columns; see the module docstring for the contract.

    ``columns``: the events columns (numpy arrays named as in ``EVENT_COLUMNS``), sorted by
    (lane_id, ts_ns). ``names``: interned event names. ``lanes`` / ``counters``: columns named as in
    ``LANE_COLUMNS`` / ``COUNTER_COLUMNS``.
    """

    def __init__(
        self,
        columns: Columns,
        names: list[str],
        lanes: Columns,
        counters: Columns | None = None,
        meta: TraceMeta | None = None,
    ) -> None:
        n = len(columns["ts_ns"])
        self._events = {
            name: np.asarray(columns[name], dtype=dtype)
            if name in columns
            else np.full(n, LATER_COLUMNS[name], dtype=dtype)
            for name, dtype, _ in EVENT_COLUMNS
        }
        self.name_list = list(names)
        self._lanes = lanes
        self._counters = counters if counters is not None else empty_columns(COUNTER_COLUMNS)
        self.meta = meta or TraceMeta()

    def __len__(self) -> int:
        return len(self._events["ts_ns"])

    def col(self, name: str) -> np.ndarray:
        """One events column as a numpy array (do not modify it)."""
        return self._events[name]

    def lane_column(self, name: str) -> np.ndarray:
        """One lanes column as a numpy array (strings as an object array)."""
        return self._lanes[name]

    def counter_column(self, name: str) -> np.ndarray:
        return self._counters[name]

    # -- Arrow views ---------------------------------------------------------------------------

    @cached_property
    def events(self) -> pa.Table:
        """The events as an Arrow table (numeric columns shared with numpy, not copied)."""
        return _to_arrow(self._events, EVENT_COLUMNS)

    @cached_property
    def names(self) -> pa.Array:
        import pyarrow as pa

        return pa.array(self.name_list, pa.string())

    @cached_property
    def lanes(self) -> pa.Table:
        return _to_arrow(self._lanes, LANE_COLUMNS)

    @cached_property
    def counters(self) -> pa.Table:
        return _to_arrow(self._counters, COUNTER_COLUMNS)

    @classmethod
    def from_tables(
        cls, events: pa.Table, names: pa.Array, lanes: pa.Table, counters: pa.Table, meta: TraceMeta
    ) -> EventStore:
        """A store over Arrow tables (as read back from Parquet)."""
        return cls(
            columns=_from_arrow(events, EVENT_COLUMNS),
            names=names.to_pylist(),
            lanes=_from_arrow(lanes, LANE_COLUMNS),
            counters=_from_arrow(counters, COUNTER_COLUMNS),
            meta=meta,
        )

    # -- persistence ---------------------------------------------------------------------------

    def to_files(self, compression: str = "zstd") -> dict[str, bytes]:
        """The store as ``{file name: bytes}``: Parquet tables plus ``meta.json``."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        out: dict[str, bytes] = {}
        tables = {
            "events.parquet": self.events,
            "names.parquet": pa.table({"name": self.names}),
            "lanes.parquet": self.lanes,
            "counters.parquet": self.counters,
        }
        for fname, table in tables.items():
            buf = io.BytesIO()
            pq.write_table(table, buf, compression=compression)
            out[fname] = buf.getvalue()
        out["meta.json"] = msgspec.json.encode(self.meta)
        return out

    @classmethod
    def from_files(cls, files: Mapping[str, bytes]) -> EventStore:
        """Inverse of ``to_files``."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        def table(fname: str) -> pa.Table:
            return pq.read_table(pa.BufferReader(files[fname]))

        events = table("events.parquet")
        known = [f for f in arrow_schema(EVENT_COLUMNS) if f.name in events.column_names]
        return cls.from_tables(
            events=events.select([f.name for f in known]).cast(pa.schema(known)),
            names=table("names.parquet").column("name").combine_chunks(),
            lanes=table("lanes.parquet").cast(arrow_schema(LANE_COLUMNS)),
            counters=table("counters.parquet").cast(arrow_schema(COUNTER_COLUMNS)),
            meta=msgspec.json.decode(files["meta.json"], type=TraceMeta),
        )

    def to_dir(self, path: str | Path) -> None:
        """Write the store as files into directory ``path`` (created if missing)."""
        root = Path(path)
        root.mkdir(parents=True, exist_ok=True)
        for fname, data in self.to_files().items():
            (root / fname).write_bytes(data)

    @classmethod
    def from_dir(cls, path: str | Path) -> EventStore:
        root = Path(path)
        return cls.from_files({p.name: p.read_bytes() for p in root.iterdir() if p.is_file()})

    def to_bytes(self) -> bytes:
        """One blob (an uncompressed zip of ``to_files()``) for a single storage object."""
        buf = io.BytesIO()
        import zipfile  # here: reading a trace does not need it

        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
            for fname, data in self.to_files().items():
                zf.writestr(fname, data)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> EventStore:
        import zipfile

        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return cls.from_files({name: zf.read(name) for name in zf.namelist()})


__all__ = [
    "COUNTER_COLUMNS",
    "EVENT_COLUMNS",
    "GPU_LANE_KINDS",
    "GPU_OP_KINDS",
    "LANE_COLUMNS",
    "LANE_KINDS",
    "EventStore",
    "Kind",
    "TraceMeta",
    "arrow_schema",
    "empty_columns",
]
