"""Turn decoded trace events into an ``EventStore`` (columns, interning, lanes, launch join).

Every step works on whole columns: attribute extraction runs through ``map``/``attrgetter`` in C,
the rest is numpy. The only Python loops run over metadata (``M``) events, distinct
categories and lanes, and the rare ``C`` counter events.
"""

from __future__ import annotations

import re
from itertools import compress
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np

from profilerhub_analysis.reader import Decoded, Event, decode, decode_counters, read_bytes
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

_LANE_CPU, _LANE_GPU, _LANE_OTHER = 0, 1, 2
_LANE_KIND_NAMES = ("cpu_thread", "gpu_stream", "other")


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


def load_trace(path: str | Path, max_bytes: int | None = None) -> EventStore:
    """Read one trace file (``.json`` or ``.json.gz``) into an ``EventStore``.

    Raises ``TraceError`` (with a one-line message) for unreadable or oversized input.
    """
    p = Path(path)
    data = read_bytes(p, max_bytes)
    return parse_trace(data, source=p.name)


def parse_trace(data: bytes, source: str = "trace") -> EventStore:
    """Build an ``EventStore`` from the bytes of a (decompressed) trace document."""
    decoded = decode(data, source)
    return build_store(decoded, data, source)


def _values(items: list[Any], attr: str) -> list[Any]:
    return list(map(attrgetter(attr), items))


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


def _lane_keys(
    gpu: np.ndarray, pids: list[int | str], tids: list[int | str]
) -> tuple[np.ndarray, list[tuple[bool, int | str, int | str]]]:
    """Per event, the index of its distinct (is GPU work, pid, tid) key, and those keys."""
    pid_ids, pid_values = _intern(pids)
    tid_ids, tid_values = _intern(tids)
    code = (gpu.astype(np.int64) * len(pid_values) + pid_ids) * len(tid_values) + tid_ids
    uniq, inverse = np.unique(code, return_inverse=True)
    keys = []
    for c in uniq.tolist():  # once per lane
        rest, t = divmod(c, len(tid_values))
        g, p = divmod(rest, len(pid_values))
        keys.append((bool(g), pid_values[p], tid_values[t]))
    return inverse.reshape(-1).astype(np.int64), keys


def _label_number(label: str) -> int:
    """The last number in a label ("stream 7" -> 7, "0x1" -> 1), else -1."""
    try:
        return int(label, 0)
    except ValueError:
        digits = re.findall(r"\d+", label)
        return int(digits[-1]) if digits else -1


def _as_int(value: int | str | None) -> int:
    if value is None:
        return -1
    return value if isinstance(value, int) else _label_number(value)


def build_store(decoded: Decoded, data: bytes | None = None, source: str = "trace") -> EventStore:
    """Columns, lanes and the launch join for the decoded events of one document."""
    evs = decoded.events
    skipped = dict(decoded.skipped)
    ph_ids, ph_names = _intern(_values(evs, "ph"))
    ph_counts = np.bincount(ph_ids, minlength=len(ph_names)).tolist()
    phases = dict(zip(ph_names, ph_counts, strict=True))
    xs: list[Event] = list(compress(evs, _is(ph_ids, ph_names, "X")))
    m = len(xs)

    cat_ids, cat_names = _intern(_values(xs, "cat"))
    cat_lut = np.array([int(category_kind(c)) for c in cat_names] or [0], dtype=np.int8)
    kind = cat_lut[cat_ids]

    ts_raw = _number_array(_values(xs, "ts"))
    dur_raw = _number_array(_values(xs, "dur"))
    ts_ns, ts_ok = _to_ns(ts_raw)
    dur_ns, dur_ok = _to_ns(dur_raw)
    dur_ok &= dur_ns >= 0
    if dur_raw.dtype.kind == "f":
        dur_ok &= np.where(np.isfinite(dur_raw), dur_raw, 0) < _MAX_DUR_US
    ts_type = "int" if ts_raw.dtype.kind in "iu" and dur_raw.dtype.kind in "iu" else "float"

    args = _values(xs, "args")
    correlation = np.fromiter(map(attrgetter("correlation"), args), dtype=np.int64, count=m)
    nbytes = np.fromiter(map(attrgetter("bytes"), args), dtype=np.int64, count=m)
    stream_ids, stream_values = _intern(_values(args, "stream"))
    stream = np.array([_as_int(v) for v in stream_values] or [-1], dtype=np.int64)[stream_ids]
    gpu_lane = np.isin(kind, np.array(GPU_LANE_KINDS, dtype=np.int8))
    raw_lane, raw_keys = _lane_keys(gpu_lane, _values(xs, "pid"), _values(xs, "tid"))
    name_id, name_list = _intern(_values(xs, "name"))

    valid = ts_ok & dur_ok
    if not valid.all():
        skipped["X event with a missing or invalid ts"] = int((~ts_ok).sum())
        bad_dur = int((ts_ok & ~dur_ok).sum())
        if bad_dur:
            skipped["X event with a missing, negative or absurd dur"] = bad_dur
        skipped = {k: v for k, v in skipped.items() if v}

    keep = np.flatnonzero(valid)
    cols = {
        "ts_ns": ts_ns[keep],
        "dur_ns": dur_ns[keep],
        "name_id": name_id[keep],
        "kind": kind[keep],
        "correlation": correlation[keep],
        "bytes": nbytes[keep],
        "stream": stream[keep],
    }
    meta_events = list(compress(evs, _is(ph_ids, ph_names, "M")))
    lanes, lane_of_raw, device_of_raw = _build_lanes(raw_keys, raw_lane, keep, args, meta_events)
    lane_id = lane_of_raw[raw_lane[keep]]
    cols["device"] = device_of_raw[raw_lane[keep]]
    order = _lane_time_order(lane_id, cols["ts_ns"])
    cols = {k: v[order] for k, v in cols.items()}
    cols["lane_id"] = lane_id[order].astype(np.int32)
    lane_kind_codes = np.array([_LANE_KIND_NAMES.index(k) for k in lanes["kind"].tolist()] or [0])
    cols["launch"] = launch_join(cols["kind"], cols["correlation"], lane_kind_codes[cols["lane_id"]])

    doc = decoded.doc
    dist = doc.distributedInfo if isinstance(doc.distributedInfo, dict) else None
    rank = dist.get("rank") if dist else None
    meta = TraceMeta(
        source=source,
        events_total=decoded.events_total,
        phases=phases,
        skipped=skipped,
        base_time_ns=doc.baseTimeNanoseconds,
        ts_type=ts_type,
        device_properties=doc.deviceProperties if isinstance(doc.deviceProperties, list) else [],
        distributed_info=dist,
        rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
        schema_version=doc.schemaVersion,
        trace_name=doc.traceName if isinstance(doc.traceName, str) else None,
    )
    instants = list(compress(evs, _is(ph_ids, ph_names, "i") | _is(ph_ids, ph_names, "I")))
    counters = _build_counters(instants, data if phases.get("C") else None)
    return EventStore(columns=cols, names=name_list, lanes=lanes, counters=counters, meta=meta)


def _lane_time_order(lane_id: np.ndarray, ts_ns: np.ndarray) -> np.ndarray:
    """Permutation sorting by (lane_id, ts_ns), stable; one int64 sort when the span allows."""
    if not len(ts_ns):
        return np.zeros(0, dtype=np.int64)
    rel = ts_ns - ts_ns.min()
    span_bits = int(rel.max()).bit_length()
    lane_bits = int(lane_id.max()).bit_length() if len(lane_id) else 0
    if span_bits + lane_bits <= 62:
        return np.argsort((lane_id.astype(np.int64) << span_bits) | rel, kind="stable")
    return np.lexsort((ts_ns, lane_id))


def launch_join(kind: np.ndarray, correlation: np.ndarray, lane_kind: np.ndarray) -> np.ndarray:
    """For each GPU op, the row of the CPU-side event with the same correlation id, else -1.

    CPU side = any event on a CPU lane that is neither a GPU op nor ``cuda_sync`` (runtime and
    driver launch calls whatever their name: cudaLaunchKernel, cuLaunchKernel, cudaGraphLaunch,
    hipExtModuleLaunchKernel, ...). When several CPU events share an id the earliest row wins.
    """
    out = np.full(len(kind), -1, dtype=np.int64)
    gpu_op = np.isin(kind, np.array(GPU_OP_KINDS, dtype=np.int8))
    gpu_rows = np.flatnonzero(gpu_op & (correlation >= 0))
    cpu_rows = np.flatnonzero(
        (lane_kind == _LANE_CPU) & ~gpu_op & (kind != Kind.CUDA_SYNC) & (correlation >= 0)
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


def _build_lanes(
    raw_keys: list[tuple[bool, int | str, int | str]],
    raw_lane: np.ndarray,
    keep: np.ndarray,
    args: list[Any],
    meta_events: list[Event],
) -> tuple[Columns, np.ndarray, np.ndarray]:
    """Lanes from the distinct (is GPU work, pid, tid) keys, in display order.

    Returns the lanes table and, per raw key, its lane id and device (-1 for CPU lanes). GPU
    work stays on a GPU lane whatever its pid/tid spelling (2021 traces name streams "stream 7");
    CPU-side events with label pids/tids (Kineto's "Spans" row) go to an ``other`` lane.
    """
    used = np.zeros(len(raw_keys), dtype=bool)
    used[raw_lane[keep]] = True
    first_row = np.full(len(raw_keys), -1, dtype=np.int64)
    first_row[raw_lane[::-1]] = np.arange(len(raw_lane))[::-1]

    proc_name: dict[int, str] = {}
    proc_sort: dict[int, int] = {}
    thread_name: dict[tuple[int, int], str] = {}
    thread_sort: dict[tuple[int, int], int] = {}
    for e in meta_events:  # one per process/thread, not per event
        if not isinstance(e.pid, int) or not isinstance(e.tid, int):
            continue
        a = e.args
        if e.name == "process_name" and a.name:
            proc_name[e.pid] = a.name
        elif e.name == "process_labels" and a.labels:
            proc_name.setdefault(e.pid, a.labels)
        elif e.name == "process_sort_index" and a.sort_index is not None:
            proc_sort[e.pid] = a.sort_index
        elif e.name == "thread_name" and a.name:
            thread_name[(e.pid, e.tid)] = a.name.strip()
        elif e.name == "thread_sort_index" and a.sort_index is not None:
            thread_sort[(e.pid, e.tid)] = a.sort_index

    rows: list[tuple[Any, ...]] = []
    devices = np.full(len(raw_keys), -1, dtype=np.int32)
    for i, (is_gpu, raw_pid, raw_tid) in enumerate(raw_keys):  # once per lane
        if not used[i]:
            continue
        labelled = not isinstance(raw_pid, int) or not isinstance(raw_tid, int)
        p, t = _as_int(raw_pid), _as_int(raw_tid)
        if is_gpu:
            cls = _LANE_GPU
            dev = raw_pid if isinstance(raw_pid, int) and raw_pid >= 0 else args[first_row[i]].device
            dev = dev if dev >= 0 else p
            devices[i] = dev
            label = f"GPU {dev} stream {t}"
        elif labelled:
            cls, dev = _LANE_OTHER, -1
            label = f"{raw_pid} / {raw_tid}"
        else:
            cls, dev = _LANE_CPU, -1
            label = thread_name.get((p, t)) or f"thread {t}"
            if p in proc_name:
                label = f"{proc_name[p]} ({p}) {label}"
        sort_key = (cls, proc_sort.get(p, p), p, thread_sort.get((p, t), t), t, str(raw_pid), str(raw_tid))
        rows.append((sort_key, i, _LANE_KIND_NAMES[cls], p, t, dev, label))
    rows.sort(key=lambda r: r[0])
    lane_of_raw = np.full(len(raw_keys), -1, dtype=np.int64)
    for lane, row in enumerate(rows):
        lane_of_raw[row[1]] = lane
    lanes: Columns = {
        "kind": np.array([r[2] for r in rows], dtype=object),
        "pid": np.array([r[3] for r in rows], dtype=np.int64),
        "tid": np.array([r[4] for r in rows], dtype=np.int64),
        "device": np.array([r[5] for r in rows], dtype=np.int32),
        "name": np.array([r[6] for r in rows], dtype=object),
        "sort": np.arange(len(rows), dtype=np.int64),
    }
    return lanes, lane_of_raw, devices


def _build_counters(instants: list[Event], data: bytes | None) -> Columns:
    names: list[str] = []
    ts_parts: list[np.ndarray] = []
    values: list[np.ndarray] = []

    inst_ids, inst_names = _intern(_values(instants, "name"))
    mem = list(compress(instants, _is(inst_ids, inst_names, "[memory]")))
    if mem:
        ts, ok = _to_ns(_number_array(_values(mem, "ts")))
        margs = _values(mem, "args")
        dev_type = np.fromiter(map(attrgetter("device_type"), margs), np.int64, len(mem))
        dev_id = np.fromiter(map(attrgetter("device_id"), margs), np.int64, len(mem))
        for key, label in (("total_allocated", "allocated"), ("total_reserved", "reserved")):
            vals = np.array(_values(margs, key), dtype=np.float64)
            for dt, di in sorted(set(zip(dev_type.tolist(), dev_id.tolist(), strict=True))):
                sel = ok & (dev_type == dt) & (dev_id == di) & np.isfinite(vals)
                if sel.any():
                    where = "CPU" if dt == 0 else f"GPU {di}"
                    names.append(f"{where} memory {label} (bytes)")
                    ts_parts.append(ts[sel])
                    values.append(vals[sel])

    if data is not None:
        series: dict[str, tuple[list[float], list[float]]] = {}
        for ce in decode_counters(data):
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
