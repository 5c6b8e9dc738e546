"""Every operator call with its figures: the Operators view over any time range (a timeline selection).

Kept at ingest so that a range needs no second reading of the trace.

``operator_calls(forest)`` is one row per operator the plugin counts (``views.operators``' input),
as columns; ``pack``/``unpack`` turn it into one ``.npz`` (no pickles: names and shapes travel as
JSON bytes); ``operators_between(calls, t0, t1)`` sums the calls that *start* in ``[t0, t1)`` µs
(trace time, as in the trace's ``ts``) into the two tables ``views.operators`` makes, the same rows
in the same order: over the whole trace the two are equal.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from profilerhub_analysis import scratch
from profilerhub_analysis.tbviews.tree import Forest

FIGURES = ("host_self_us", "host_total_us", "device_self_us", "device_total_us", "tc_self_us", "tc_total_us")


def operator_calls(forest: Forest) -> dict[str, Any]:
    """Columns ``ts, name, shape, tc_eligible`` and ``FIGURES`` (one row per call, the plugin's
    order), and the ``names`` and ``shapes`` the two index columns point into.

    Built a chunk of calls at a time into ``scratch`` arrays (file-backed when large): names and
    shapes are numbered through tables as long as the trace's names and shapes, not its calls."""
    trace = forest.trace
    order, is_operator = forest.order, forest.is_operator
    at = scratch.select(len(order), lambda a, b: is_operator[order[a:b]], np.int32)
    ops = _each(len(at), np.int32, lambda a, b: order[at[a:b]])
    aux, dims_of = trace.aux, trace.attrs.get("dims", np.empty(0, np.int32))
    dims = _each(len(ops), np.int32, lambda a, b: dims_of[aux[forest.event[ops[a:b]]]])
    name_new, name_old = _numbered_by_first(forest.name, ops, len(trace.names))
    shape_new, shape_old = _numbered_by_first(dims, None, len(trace.raws))
    ts, end = forest.ts, forest.end
    out: dict[str, Any] = {
        "ts": _each(len(ops), np.float64, lambda a, b: ts[ops[a:b]]),
        "name": _each(len(ops), np.int32, lambda a, b: name_new[forest.name[ops[a:b]]]),
        "shape": _each(len(ops), np.int32, lambda a, b: shape_new[dims[a:b]]),
        "tc_eligible": _each(len(ops), bool, lambda a, b: forest.tc_eligible[ops[a:b]]),
        "host_self_us": _each(len(ops), np.float64, lambda a, b: forest.host_self[ops[a:b]]),
        "host_total_us": _each(len(ops), np.float64, lambda a, b: end[ops[a:b]] - ts[ops[a:b]]),
        "device_self_us": _each(len(ops), np.float64, lambda a, b: forest.device_self[ops[a:b]]),
        "device_total_us": _each(len(ops), np.float64, lambda a, b: forest.device_total[ops[a:b]]),
        "tc_self_us": _each(len(ops), np.float64, lambda a, b: forest.tc_self[ops[a:b]]),
        "tc_total_us": _each(len(ops), np.float64, lambda a, b: forest.tc_total[ops[a:b]]),
    }
    out["names"] = [trace.names[c] for c in name_old.tolist()]
    raws = [trace.raws[c] for c in shape_old.tolist()]
    out["shapes"] = [json.loads(s) if s else [] for s in raws]
    return out


def _each(n: int, dtype: Any, value: Callable[[int, int], Any]) -> np.ndarray:
    """``n`` rows of ``dtype``, ``value(start, stop)`` a chunk at a time (file-backed when large)."""
    out = scratch.empty(n, dtype)
    for a in range(0, n, scratch.CHUNK):
        out[a : a + scratch.CHUNK] = value(a, min(n, a + scratch.CHUNK))
    return out


def _numbered_by_first(
    codes: np.ndarray, rows: np.ndarray | None, n_codes: int
) -> tuple[np.ndarray, np.ndarray]:
    """(new number of each code, code of each new number) for the codes ``codes[rows]`` (``rows``
    None: every row) takes, numbered in order of their first row, as a dict filled row by row
    numbers them; codes are in ``[0, n_codes)``."""
    n = len(codes) if rows is None else len(rows)
    first = np.full(n_codes, n, dtype=np.int64)
    for a in range(0, n, scratch.CHUNK):
        b = min(n, a + scratch.CHUNK)
        np.minimum.at(first, codes[a:b] if rows is None else codes[rows[a:b]], np.arange(a, b))
    seen = np.flatnonzero(first < n)
    old = seen[np.argsort(first[seen], kind="stable")]
    new = np.full(n_codes, -1, dtype=np.int64)
    new[old] = np.arange(len(old))
    return new, old


def pack(calls: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    pack_into(calls, buf)
    return buf.getvalue()


def pack_into(calls: dict[str, Any], out: BinaryIO) -> None:
    """``pack(calls)`` written to ``out`` (a file: the calls' bytes need not be in memory at once)."""
    arrays: dict[str, Any] = {k: v for k, v in calls.items() if isinstance(v, np.ndarray)}
    text = json.dumps({"names": calls["names"], "shapes": calls["shapes"]}, separators=(",", ":"))
    np.savez_compressed(out, **arrays, labels=np.frombuffer(text.encode(), dtype=np.uint8))


def unpack(data: bytes) -> dict[str, Any]:
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        out: dict[str, Any] = {k: npz[k] for k in npz.files if k != "labels"}
        out.update(json.loads(npz["labels"].tobytes()))
    return out


def operators_between(
    calls: dict[str, Any], t0: float | None = None, t1: float | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(by name, by name + input shape, calls counted) over the calls starting in ``[t0, t1)``;
    summed a chunk of calls at a time, in call order (the sums ``np.bincount`` makes)."""
    ts = calls["ts"]

    def starts_inside(a: int, b: int) -> np.ndarray:
        keep = np.ones(b - a, dtype=bool)
        if t0 is not None:
            keep &= ts[a:b] >= t0
        if t1 is not None:
            keep &= ts[a:b] < t1
        return keep

    rows = scratch.select(len(ts), starts_inside)
    names, shapes = calls["name"], calls["shape"]
    named = lambda g: {"name": calls["names"][g]}  # noqa: E731
    by_name = _table(calls, rows, lambda r: names[r], named)
    n_shapes = max(len(calls["shapes"]), 1)
    pair = lambda r: names[r].astype(np.int64) * n_shapes + shapes[r]  # noqa: E731
    shaped = lambda g: {"name": calls["names"][g // n_shapes], "input_shape": calls["shapes"][g % n_shapes]}  # noqa: E731
    by_shape = _table(calls, rows, pair, shaped)
    return by_name, by_shape, len(rows)


def _table(
    calls: dict[str, Any],
    rows: np.ndarray,
    group_of: Callable[[np.ndarray], np.ndarray],
    label: Any,
) -> list[dict[str, Any]]:
    """One row per group (``group_of(rows)``: integer codes) in order of its first
    call (``views.operators``' dict order), sorted as there: device self time, else host self
    time, largest first (stable). Sums are numpy's, so they may differ from the plugin's
    call-order sums in the last bit. Two passes over ``rows`` a chunk at a time: the groups there
    are, then their sums."""
    if not len(rows):
        return []
    keys_parts = []
    for a in range(0, len(rows), scratch.CHUNK):
        keys_parts.append(np.unique(group_of(rows[a : a + scratch.CHUNK])))
    keys = np.unique(np.concatenate(keys_parts))
    del keys_parts
    n_keys = len(keys)
    counts = np.zeros(n_keys, dtype=np.int64)
    first = np.full(n_keys, len(rows), dtype=np.int64)
    sums = {k: np.zeros(n_keys) for k in FIGURES}
    for a in range(0, len(rows), scratch.CHUNK):
        r = rows[a : a + scratch.CHUNK]
        g = np.searchsorted(keys, group_of(r))
        np.add.at(counts, g, 1)
        np.minimum.at(first, g, np.arange(a, a + len(r)))
        for k in FIGURES:
            np.add.at(sums[k], g, calls[k][r])
    order = np.argsort(first, kind="stable")  # groups by first appearance
    lists = {k: v.tolist() for k, v in sums.items()}
    out = []
    for g in order.tolist():
        dev_self, dev_total = lists["device_self_us"][g], lists["device_total_us"][g]
        out.append({
            **label(int(keys[g])),
            "calls": int(counts[g]),
            "device_self_us": dev_self,
            "device_total_us": dev_total,
            "host_self_us": lists["host_self_us"][g],
            "host_total_us": lists["host_total_us"][g],
            "tc_eligible": bool(calls["tc_eligible"][rows[first[g]]]),
            "tc_self_pct": 100.0 * lists["tc_self_us"][g] / dev_self if dev_self > 0 else 0,
            "tc_total_pct": 100.0 * lists["tc_total_us"][g] / dev_total if dev_total > 0 else 0,
        })  # fmt: skip
    out.sort(key=lambda r: -r["device_self_us"] if r["device_self_us"] else -r["host_self_us"])
    return out


__all__ = ["FIGURES", "operator_calls", "operators_between", "pack", "pack_into", "unpack"]
