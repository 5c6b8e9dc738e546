"""Turn decoded trace events into an ``EventStore`` (columns, interning, lanes, launch join).

Every step works on whole columns: attribute extraction runs through ``map``/``attrgetter`` in C,
the rest is numpy. The only Python loops run over metadata (``M``) events, distinct
categories and lanes, and the rare ``C`` counter events.

A Kineto event's ``Kind`` comes from its ``cat``; a TensorFlow trace (decoded as one, see
``reader``, and naming TF's planes in its metadata) has no ``cat``, and ``tf_trace`` gives kinds,
streams and its string-valued arguments from the lanes and names instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import compress
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np

from profilerhub_analysis import scratch, tf_trace
from profilerhub_analysis.events import PHASE_OF, Complete, Counter, Instant, Metadata, TfComplete, TraceEvent
from profilerhub_analysis.lanes import LANE_GPU, LANE_KIND_NAMES, as_int, build_lanes
from profilerhub_analysis.reader import Decoded, decode, file_chunks
from profilerhub_analysis.store import (
    COUNTER_COLUMNS,
    GPU_LANE_KINDS,
    GPU_OP_KINDS,
    Columns,
    EventStore,
    Kind,
    TraceMeta,
    empty_columns,
)
from profilerhub_analysis.stream import SLICE_BYTES, decode_stream

#: Category spellings (lower-cased) of Kineto traces, current and 2021-era.
CATEGORY_KINDS: dict[str, Kind] = {
    "cpu_op": Kind.CPU_OP,
    "operator": Kind.CPU_OP,
    "user_annotation": Kind.USER_ANNOTATION,
    "gpu_user_annotation": Kind.GPU_USER_ANNOTATION,
    "cuda_runtime": Kind.RUNTIME,
    "runtime": Kind.RUNTIME,
    "cuda_driver": Kind.DRIVER,
    "driver": Kind.DRIVER,
    "kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "memset": Kind.MEMSET,
    "python_function": Kind.PYTHON_FUNCTION,
    "python": Kind.PYTHON_FUNCTION,
    "cuda_sync": Kind.CUDA_SYNC,
    "trace": Kind.TRACE_SPAN,
}

# Beyond these |ts| or dur (µs) a value cannot be a real timestamp or duration (int64 ns overflow
# starts at 9.2e15 µs; no profile lasts 100 days).
_MAX_ABS_TS_US = 9.0e15
_MAX_DUR_US = 8.64e12


def category_kind(cat: str) -> Kind:
    """The ``Kind`` of a category string (case-insensitive; ``xpu_runtime`` etc. are runtimes)."""
    low = cat.lower()
    kind = CATEGORY_KINDS.get(low)
    if kind is not None:
        return kind
    if low.endswith("_runtime"):
        return Kind.RUNTIME
    if low.endswith("_driver"):
        return Kind.DRIVER
    return Kind.OTHER


def load_trace(
    path: str | Path, max_bytes: int | None = None, scratch_dir: str | Path | None = None
) -> EventStore:
    """Read one trace file (``.json`` or ``.json.gz``) into an ``EventStore``, as a stream
    (``stream``: the document is never in memory whole; the store is the one ``parse_trace``
    builds of the same bytes). A large trace's columns are file-backed (``scratch``: nameless
    files in ``scratch_dir``, None: the system's temporary directory), not anonymous memory.

    Raises ``TraceError`` (with a one-line message) for unreadable or oversized input.
    """
    p = Path(path)
    chunks = file_chunks(p, max_bytes, size=SLICE_BYTES)
    return build_store(decode_stream(chunks, p.name), source=p.name, scratch_dir=scratch_dir)


def parse_trace(data: bytes | bytearray, source: str = "trace") -> EventStore:
    """Build an ``EventStore`` from the bytes of a (decompressed) trace document."""
    decoded = decode(data, source)
    del data  # the typed events hold copies; only batched decoding still needs the buffer
    return build_store(decoded, source)


def _values(items: list[Any], attr: str) -> list[Any]:
    return list(map(attrgetter(attr), items))


def _numbers(args: list[Any], attr: str, dtype: Any, count: int) -> np.ndarray:
    """One numeric ``args`` field as a column. The decoder lets these fields be strings (some
    exporters write numbers as text): numpy reads numeric text itself; only a batch holding text
    that is no number takes the slow way, where that value (that field, not its event) is -1."""
    try:
        return np.fromiter(map(attrgetter(attr), args), dtype=dtype, count=count)
    except (ValueError, TypeError, OverflowError):
        return np.fromiter(
            (_number_or_absent(v) for v in map(attrgetter(attr), args)), dtype=dtype, count=count
        )


def _number_or_absent(value: Any) -> float:
    if not isinstance(value, str):
        return float(value)
    try:
        number = float(value)
    except ValueError:
        return -1.0
    return number if np.isfinite(number) and abs(number) < 2**62 else -1.0


class _Interner(dict[Any, int]):
    def __missing__(self, key: Any) -> int:
        value = self[key] = len(self)
        return value


def _intern(values: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Hashable values -> (int32 ids in first-seen order, distinct values). Lookups run in C."""
    table = _Interner()
    ids = np.fromiter(map(table.__getitem__, values), dtype=np.int32, count=len(values))
    return ids, list(table)


def _is(ids: np.ndarray, names: list[str], wanted: str) -> np.ndarray:
    """Mask of ``ids`` equal to the id of ``wanted`` (all False when it never occurs)."""
    if wanted not in names:
        return np.zeros(len(ids), dtype=bool)
    return ids == names.index(wanted)


def _to_ns(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """µs (int or float array) -> (int64 ns, valid mask). Integer µs stay exact."""
    if values.dtype.kind in "iu":
        return values.astype(np.int64) * 1000, np.ones(len(values), dtype=bool)
    v = values.astype(np.float64)
    valid = np.isfinite(v) & (np.abs(v) < _MAX_ABS_TS_US)
    v = np.where(valid, v, 0.0)
    whole = np.floor(v)
    ns = whole.astype(np.int64) * 1000 + np.rint((v - whole) * 1000.0).astype(np.int64)
    return ns, valid


def _number_array(items: list[Any]) -> np.ndarray:
    arr = np.array(items)
    if arr.dtype.kind not in "iuf":
        # ints too big for int64, or something odd: go through float and let validation decide
        arr = np.array([x if isinstance(x, int | float) else np.nan for x in items], dtype=np.float64)
    return arr


class _Columns:
    """Columns extracted batch by batch, with interning tables shared across batches."""

    def __init__(self, tensorflow: bool, scratch_dir: str | Path | None = None) -> None:
        #: TensorFlow events (``TfComplete``): their own argument columns are extracted too.
        self.tensorflow = tensorflow
        self.tables = {
            key: _Interner() for key in ("type", "cat", "name", "pid", "tid", "stream", *_TF_DETAILS)
        }
        self.phases: dict[str, int] = {}
        #: The event columns' parts (file-backed once large: ``scratch.ColumnParts``).
        self.parts = scratch.ColumnParts(scratch_dir)
        self.meta_events: list[Metadata] = []
        #: PyTorch's ``[memory]`` instants as columns (ts, device type and id, the two totals),
        #: batch by batch: not their events, which would be held to the end.
        self.memory: dict[str, list[np.ndarray]] = {}
        self.counter_events: list[Counter] = []
        self.all_int = True
        self.any_x = False

    def _ids(self, table: str, values: Iterable[Any], count: int) -> np.ndarray:
        return np.fromiter(map(self.tables[table].__getitem__, values), dtype=np.int32, count=count)

    def _put(self, **columns: np.ndarray) -> None:
        for key, value in columns.items():
            self.parts.add(key, value)

    def _of_type(self, evs: list[TraceEvent], type_ids: np.ndarray, *types: type) -> list[Any]:
        table = self.tables["type"]
        wanted = [table[t] for t in types if t in table]
        if not wanted:
            return []
        mask = type_ids == wanted[0] if len(wanted) == 1 else np.isin(type_ids, wanted)
        return list(compress(evs, mask))

    def _put_memory(self, mem: list[Instant]) -> None:
        margs = _values(mem, "args")
        n = len(mem)
        columns = {
            "ts": _number_array(_values(mem, "ts")),
            "device_type": np.fromiter(map(attrgetter("device_type"), margs), np.int64, n),
            "device_id": np.fromiter(map(attrgetter("device_id"), margs), np.int64, n),
            "total_allocated": np.array(_values(margs, "total_allocated"), dtype=np.float64),
            "total_reserved": np.array(_values(margs, "total_reserved"), dtype=np.float64),
        }
        for key, value in columns.items():
            self.memory.setdefault(key, []).append(value)

    def add(self, evs: list[TraceEvent]) -> None:
        type_ids = self._ids("type", map(type, evs), len(evs))
        types = list(self.tables["type"])
        for cls, n in zip(types, np.bincount(type_ids, minlength=len(types)).tolist(), strict=True):
            if n:
                self.phases[PHASE_OF[cls]] = self.phases.get(PHASE_OF[cls], 0) + n
        self.meta_events += self._of_type(evs, type_ids, Metadata)
        self.counter_events += self._of_type(evs, type_ids, Counter)
        instants = self._of_type(evs, type_ids, *(t for t in types if issubclass(t, Instant)))
        if instants:
            inst_ids, inst_names = _intern(_values(instants, "name"))
            mem: list[Instant] = list(compress(instants, _is(inst_ids, inst_names, "[memory]")))
            if mem:
                self._put_memory(mem)
        xs: list[Complete] = self._of_type(evs, type_ids, Complete, TfComplete)
        m = len(xs)
        # float64 holds integer µs exactly (|ts| < 2**53), and _to_ns keeps them exact
        ts_raw = np.fromiter(map(attrgetter("ts"), xs), dtype=np.float64, count=m)
        dur_raw = np.fromiter(map(attrgetter("dur"), xs), dtype=np.float64, count=m)
        if m:  # a batch without X events (a stream's slice may be one) says nothing of their type
            self.any_x = True
            self.all_int &= type(xs[0].ts) is int and type(xs[-1].dur) is int
        ts_ns, ts_ok = _to_ns(ts_raw)
        dur_ns, dur_ok = _to_ns(dur_raw)
        dur_ok &= dur_ns >= 0
        dur_ok &= np.where(np.isfinite(dur_raw), dur_raw, 0) < _MAX_DUR_US
        args = _values(xs, "args")
        self._put(
            cat_id=self._ids("cat", map(attrgetter("cat"), xs), m),
            name_id=self._ids("name", map(attrgetter("name"), xs), m),
            pid_id=self._ids("pid", map(attrgetter("pid"), xs), m),
            tid_id=self._ids("tid", map(attrgetter("tid"), xs), m),
            stream_id=self._ids("stream", map(attrgetter("stream"), args), m),
            ts_ns=ts_ns,
            dur_ns=dur_ns,
            ts_ok=ts_ok,
            dur_ok=dur_ok,
            correlation=_numbers(args, "correlation", np.int64, m),
            bytes=_numbers(args, "bytes", np.int64, m),
            bandwidth=_numbers(args, "bandwidth", np.float32, m),
            blocks_per_sm=_numbers(args, "blocks_per_sm", np.float32, m),
            occupancy=_numbers(args, "occupancy", np.float32, m),
        )
        if self.tensorflow:
            # kept beside Kineto's: the sniff may take a Kineto trace that names a TF plane for TF's
            self._put(tf_correlation=tf_trace.int_values(_values(args, "correlation_id")))
            self._put(step_num=tf_trace.int_values(_values(args, "step_num")))
            for key in _TF_DETAILS:
                self._put(**{f"{key}_id": self._ids(key, map(attrgetter(key), args), m)})

    def column(self, key: str, dtype: Any) -> np.ndarray:
        return self.parts.column(key, dtype)


def _tf_columns(acc: _Columns, tf: tf_trace.Planes) -> dict[str, np.ndarray]:
    """kind, name_id (step markers renamed), stream, gpu (on a GPU plane), bytes and occupancy of
    a TensorFlow trace's events."""
    pids, tids = list(acc.tables["pid"]), list(acc.tables["tid"])
    pair = acc.column("pid_id", np.int32).astype(np.int64) * max(len(tids), 1) + acc.column(
        "tid_id", np.int32
    )
    uniq, lane_of_event = np.unique(pair, return_inverse=True)
    keys = [(pids[c // max(len(tids), 1)], tids[c % max(len(tids), 1)]) for c in uniq.tolist()]
    name_id = acc.column("name_id", np.int32)
    kind, stream, gpu = tf_trace.classify(
        tf, keys, lane_of_event.reshape(-1), list(acc.tables["name"]), name_id
    )
    kind, name_id = tf_trace.step_markers(kind, name_id, acc.column("step_num", np.int64), acc.tables["name"])
    memcpy = tf_trace.bytes_lut(list(acc.tables["memcpy_details"]))[acc.column("memcpy_details_id", np.int32)]
    memset = tf_trace.bytes_lut(list(acc.tables["memset_details"]))[acc.column("memset_details_id", np.int32)]
    occupancy = tf_trace.occupancy_lut(list(acc.tables["kernel_details"]))
    return {
        "kind": kind,
        "name_id": name_id,
        "stream": stream,
        "gpu": gpu,
        "bytes": np.where(memcpy >= 0, memcpy, memset),
        "occupancy": occupancy[acc.column("kernel_details_id", np.int32)],
    }


def _stream_lut(acc: _Columns) -> np.ndarray:
    return np.array([as_int(v) for v in acc.tables["stream"]] or [-1], dtype=np.int64)


def build_store(decoded: Decoded, source: str = "trace", scratch_dir: str | Path | None = None) -> EventStore:
    """Columns, lanes and the launch join for the decoded events of one document.

    Memory: the columns are built part by part and, once large, in nameless files
    (``scratch``); every full-length step after that (lanes, the sort, the permutation, the launch
    join) runs in chunks into file-backed arrays, so what stays anonymous is per-event bytes of
    the sort's permutation and a few int8/bool masks, not the columns.
    """
    acc = _Columns(decoded.dialect.tensorflow, scratch_dir)
    for batch in decoded.batches():
        acc.add(batch)
        del batch
    skipped = dict(decoded.skipped)
    tf = tf_trace.planes(acc.meta_events, source) if acc.tensorflow else None
    if tf is None:
        cat_lut = np.array([int(category_kind(c)) for c in acc.tables["cat"]] or [0], dtype=np.int8)
        kind = cat_lut[acc.column("cat_id", np.int32)]
        gpu = np.isin(kind, np.array(GPU_LANE_KINDS, dtype=np.int8))
        tf_cols: dict[str, np.ndarray] = {}
    else:  # stream, bytes, occupancy replace the Kineto columns below
        tf_cols = _tf_columns(acc, tf)
        kind, gpu = tf_cols.pop("kind"), tf_cols.pop("gpu")
    ts_ok, dur_ok = acc.column("ts_ok", bool), acc.column("dur_ok", bool)
    valid = ts_ok & dur_ok
    if not valid.all():
        skipped["X event with a missing or invalid ts"] = int((~ts_ok).sum())
        skipped["X event with a missing, negative or absurd dur"] = int((ts_ok & ~dur_ok).sum())
        skipped = {k: v for k, v in skipped.items() if v}
    # every event valid (the usual case): views, not a copy of every column
    keep: Any = slice(None) if valid.all() else np.flatnonzero(valid)
    del valid, ts_ok, dur_ok

    def kept(column: np.ndarray) -> np.ndarray:
        return column if isinstance(keep, slice) else scratch.take(column, keep, scratch_dir)

    pids, tids = list(acc.tables["pid"]), list(acc.tables["tid"])
    uniq, raw_lane = _raw_lanes(gpu, acc.column("pid_id", np.int32), acc.column("tid_id", np.int32),
                                len(pids), max(len(tids), 1), scratch_dir)  # fmt: skip
    del gpu
    raw_keys = []
    for c in uniq.tolist():  # once per lane
        rest, t = divmod(c, max(len(tids), 1))
        g, p = divmod(rest, len(pids))
        raw_keys.append((bool(g), pids[p], tids[t]))
    lanes, lane_of_raw, device_of_raw = build_lanes(
        raw_keys, raw_lane, keep, acc.meta_events, tf.gpu if tf is not None else None
    )

    raw_lane = kept(raw_lane)
    cols = {
        "ts_ns": kept(acc.column("ts_ns", np.int64)),
        "dur_ns": kept(acc.column("dur_ns", np.int64)),
        "name_id": kept(acc.column("name_id", np.int32)),
        "kind": kind[keep],
        "correlation": kept(acc.column("correlation" if tf is None else "tf_correlation", np.int64)),
        "bytes": kept(acc.column("bytes", np.int64)),
        "bandwidth": kept(acc.column("bandwidth", np.float32)),
        "blocks_per_sm": kept(acc.column("blocks_per_sm", np.float32)),
        "occupancy": kept(acc.column("occupancy", np.float32)),
        "stream": scratch.take(_stream_lut(acc), kept(acc.column("stream_id", np.int32)), scratch_dir),
        "device": scratch.take(device_of_raw.astype(np.int32), raw_lane, scratch_dir),
    }
    cols.update({key: kept(column) for key, column in tf_cols.items()})
    lane_id = scratch.take(lane_of_raw.astype(np.int32), raw_lane, scratch_dir)
    del raw_lane, kind, tf_cols
    acc.parts.close()
    order = _lane_time_order(lane_id, cols["ts_ns"], scratch_dir)
    for key in list(cols):  # one column at a time, in chunks: one chunk's copy held at once
        cols[key] = scratch.take(cols[key], order, scratch_dir)
    cols["lane_id"] = scratch.take(lane_id, order, scratch_dir)
    del order, lane_id
    lane_kind_codes = np.array([LANE_KIND_NAMES.index(k) for k in lanes["kind"].tolist()] or [0], np.int8)
    cols["launch"] = launch_join(
        cols["kind"], cols["correlation"], scratch.take(lane_kind_codes, cols["lane_id"]), scratch_dir
    )

    doc = decoded.doc
    dist = doc.distributedInfo if isinstance(doc.distributedInfo, dict) else None
    rank = dist.get("rank") if dist else None
    meta = TraceMeta(
        source=source,
        events_total=decoded.events_total,
        phases=acc.phases,
        skipped=skipped,
        base_time_ns=doc.baseTimeNanoseconds,
        ts_type="int" if acc.all_int and acc.any_x else "float",
        device_properties=doc.deviceProperties if isinstance(doc.deviceProperties, list) else [],
        distributed_info=dist,
        rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
        schema_version=doc.schemaVersion,
        producer="kineto" if tf is None else "tensorflow",
        trace_name=doc.traceName if isinstance(doc.traceName, str) else None,
    )
    memory = {key: np.concatenate(parts) for key, parts in acc.memory.items()}
    del acc.memory
    counters = _build_counters(memory, acc.counter_events)
    return EventStore(columns=cols, names=list(acc.tables["name"]), lanes=lanes, counters=counters, meta=meta)


#: TensorFlow's string arguments that are interned per batch and parsed once per distinct value.
_TF_DETAILS = ("kernel_details", "memcpy_details", "memset_details")


def _raw_lanes(
    gpu: np.ndarray, pid_id: np.ndarray, tid_id: np.ndarray, pids: int, tids: int, scratch_dir: Any
) -> tuple[np.ndarray, np.ndarray]:
    """(distinct codes ``(gpu * pids + pid) * tids + tid``, ascending; each event's index into
    them as int32). Codes are few (threads and streams): when their space is small a presence
    table and a lookup, chunk by chunk, replace ``np.unique``'s full-length sort."""
    n = len(gpu)
    space = 2 * pids * tids
    if space > scratch.CHUNK * 16:
        code = (gpu * pids + pid_id.astype(np.int64)) * tids + tid_id
        uniq, inverse = np.unique(code, return_inverse=True)
        return uniq, inverse.reshape(-1).astype(np.int32)

    def codes(start: int) -> np.ndarray:
        stop = start + scratch.CHUNK
        return (gpu[start:stop] * pids + pid_id[start:stop]) * tids + tid_id[start:stop].astype(np.int64)

    present = np.zeros(space, dtype=bool)
    for start in range(0, n, scratch.CHUNK):
        present[codes(start)] = True
    uniq = np.flatnonzero(present)
    lookup = np.cumsum(present, dtype=np.int32) - 1
    raw_lane = scratch.empty(n, np.int32, scratch_dir)
    for start in range(0, n, scratch.CHUNK):
        raw_lane[start : start + scratch.CHUNK] = lookup[codes(start)]
    return uniq, raw_lane


def _lane_time_order(lane_id: np.ndarray, ts_ns: np.ndarray, scratch_dir: Any = None) -> np.ndarray:
    """Permutation sorting by (lane_id, ts_ns), stable; one int64 sort when the span allows (its
    key built in chunks, file-backed: the sort's own permutation is what stays in memory)."""
    if not len(ts_ns):
        return np.zeros(0, dtype=np.int64)
    t_min, t_max = int(ts_ns.min()), int(ts_ns.max())
    span_bits = (t_max - t_min).bit_length()
    lane_bits = int(lane_id.max()).bit_length() if len(lane_id) else 0
    if span_bits + lane_bits <= 62:
        key = scratch.empty(len(ts_ns), np.int64, scratch_dir)
        for start in range(0, len(ts_ns), scratch.CHUNK):
            part = slice(start, start + scratch.CHUNK)
            key[part] = (lane_id[part].astype(np.int64) << span_bits) | (ts_ns[part] - t_min)
        return np.argsort(key, kind="stable")
    return np.lexsort((ts_ns, lane_id))


def launch_join(
    kind: np.ndarray, correlation: np.ndarray, lane_kind: np.ndarray, scratch_dir: str | Path | None = None
) -> np.ndarray:
    """For each GPU op, the row of the CPU-side event with the same correlation id, else -1.

    CPU side = any event off the GPU lanes that is neither a GPU op nor ``cuda_sync`` (runtime and
    driver launch calls whatever their name: cudaLaunchKernel, cuLaunchKernel, cudaGraphLaunch,
    hipExtModuleLaunchKernel, ...). When several CPU events share an id the earliest row wins.
    """
    out = scratch.empty(len(kind), np.int64, scratch_dir)
    out[:] = -1
    gpu_op = np.isin(kind, np.array(GPU_OP_KINDS, dtype=np.int8))
    gpu_rows = np.flatnonzero(gpu_op & (correlation >= 0))
    cpu_rows = np.flatnonzero(
        (lane_kind != LANE_GPU) & ~gpu_op & (kind != Kind.CUDA_SYNC) & (correlation >= 0)
    )
    if not len(gpu_rows) or not len(cpu_rows):
        return out
    order = np.argsort(correlation[cpu_rows], kind="stable")
    sorted_corr = correlation[cpu_rows][order]
    wanted = correlation[gpu_rows]
    pos = np.minimum(np.searchsorted(sorted_corr, wanted), len(sorted_corr) - 1)
    hit = sorted_corr[pos] == wanted
    out[gpu_rows[hit]] = cpu_rows[order][pos[hit]]
    return out


def _build_counters(mem: Columns, counter_events: list[Counter]) -> Columns:
    """Counter series from PyTorch's ``[memory]`` instants (``_Columns.memory``) and ``C`` events."""
    names: list[str] = []
    ts_parts: list[np.ndarray] = []
    values: list[np.ndarray] = []

    if mem:
        ts, ok = _to_ns(mem["ts"])
        dev_type, dev_id = mem["device_type"], mem["device_id"]
        for key, label in (("total_allocated", "allocated"), ("total_reserved", "reserved")):
            vals = mem[key]
            for dt, di in sorted(set(zip(dev_type.tolist(), dev_id.tolist(), strict=True))):
                sel = ok & (dev_type == dt) & (dev_id == di) & np.isfinite(vals)
                if sel.any():
                    where = "CPU" if dt == 0 else f"GPU {di}"
                    names.append(f"{where} memory {label} (bytes)")
                    ts_parts.append(ts[sel])
                    values.append(vals[sel])

    if counter_events:
        series: dict[str, tuple[list[float], list[float]]] = {}
        for ce in counter_events:
            for key, val in (ce.args or {}).items():
                if isinstance(val, int | float) and not isinstance(val, bool) and ce.ts == ce.ts:
                    label = ce.name if key in (ce.name, "value") else f"{ce.name} {key}"
                    tsl, vl = series.setdefault(label, ([], []))
                    tsl.append(float(ce.ts))
                    vl.append(float(val))
        for label, (tsl, vl) in series.items():
            ts, ok = _to_ns(np.array(tsl, dtype=np.float64))
            names.append(label)
            ts_parts.append(ts[ok])
            values.append(np.array(vl)[ok])

    if not names:
        return empty_columns(COUNTER_COLUMNS)
    name_col = np.repeat(np.array(names, dtype=object), [len(t) for t in ts_parts])
    ts_col = np.concatenate(ts_parts).astype(np.int64)
    order = np.lexsort((ts_col, np.repeat(np.argsort(np.argsort(names)), [len(t) for t in ts_parts])))
    return {"name": name_col[order], "ts_ns": ts_col[order], "value": np.concatenate(values)[order]}


__all__ = ["CATEGORY_KINDS", "build_store", "category_kind", "launch_join", "load_trace", "parse_trace"]
