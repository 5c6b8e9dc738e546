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
    """Columns ``ts, name, pair, tc_eligible`` and ``FIGURES`` (one row per call, the plugin's
    order), the ``names`` that ``name`` points into and the (name, shape) pairs of ``pair``
    (``_add_pairs``).

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
    _add_pairs(out)
    return out


def _add_pairs(calls: dict[str, Any]) -> None:
    """Column ``shape`` (a code into ``shapes``) replaced by ``pair``: each call's (name, input
    shape) as a dense code into ``pair_name`` (into ``names``) and ``pair_shape`` (into
    ``shapes``), what the Operators view by input shape groups by. Numbered once, at ingest or
    when an older ``tb_calls.npz`` (with ``shape``) is read, so a time range only counts codes."""
    names, shapes = calls["name"], calls.pop("shape")
    n, n_shapes = len(names), max(len(calls["shapes"]), 1)
    key = lambda a, b: names[a:b].astype(np.int64) * n_shapes + shapes[a:b]  # noqa: E731
    parts = [np.unique(key(a, a + scratch.CHUNK)) for a in range(0, n, scratch.CHUNK)]
    keys = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)
    del parts
    calls["pair"] = _each(n, np.int32, lambda a, b: np.searchsorted(keys, key(a, b)))
    calls["pair_name"] = (keys // n_shapes).astype(np.int32)
    calls["pair_shape"] = (keys % n_shapes).astype(np.int32)


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
    if "pair" not in out:  # kept by an ingest before the pairs were
        _add_pairs(out)
    return out


def operators_between(
    calls: dict[str, Any], t0: float | None = None, t1: float | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(by name, by name + input shape, calls counted) over the calls starting in ``[t0, t1)``;
    summed a chunk of calls at a time (``_tables``)."""
    ts = calls["ts"]

    def starts_inside(a: int, b: int) -> np.ndarray:
        keep = np.ones(b - a, dtype=bool)
        if t0 is not None:
            keep &= ts[a:b] >= t0
        if t1 is not None:
            keep &= ts[a:b] < t1
        return keep

    rows = scratch.select(len(ts), starts_inside)
    names, shapes = calls["names"], calls["shapes"]
    pair_name, pair_shape = calls["pair_name"], calls["pair_shape"]
    named = lambda g: {"name": names[g]}  # noqa: E731
    shaped = lambda g: {"name": names[pair_name[g]], "input_shape": shapes[pair_shape[g]]}  # noqa: E731
    by_name, by_shape = _tables(
        calls, rows, [(calls["name"], len(names), named), (calls["pair"], len(pair_name), shaped)]
    )
    return by_name, by_shape, len(rows)


Group = tuple[np.ndarray, int, Callable[[int], dict[str, Any]]]
"""How ``_tables`` groups calls: each call's code (dense, in ``[0, n)``), ``n``, a group's label."""


def _tables(calls: dict[str, Any], rows: np.ndarray, groups: list[Group]) -> list[list[dict[str, Any]]]:
    """For each of ``groups``, one row per group of ``rows`` in order of its first call
    (``views.operators``' dict order), sorted as there: device self time, else host self time,
    largest first (stable). Sums are numpy's (``bincount``, a chunk of calls at a time), so they
    may differ from the plugin's call-order sums in the last bit. One pass over ``rows``, each
    figure gathered once for every table."""
    if not len(rows):
        return [[] for _ in groups]
    counts = [np.zeros(n, dtype=np.int64) for _, n, _ in groups]
    first = [np.full(n, len(rows), dtype=np.int64) for _, n, _ in groups]
    sums = [{k: np.zeros(n) for k in FIGURES} for _, n, _ in groups]
    for a in range(0, len(rows), scratch.CHUNK):
        r = rows[a : a + scratch.CHUNK]
        at = np.arange(a, a + len(r))
        codes = [column[r] for column, _, _ in groups]
        for i, (g, (_, n, _)) in enumerate(zip(codes, groups, strict=True)):
            counts[i] += np.bincount(g, minlength=n)
            np.minimum.at(first[i], g, at)
        for k in FIGURES:
            weights = calls[k][r]
            for i, (g, (_, n, _)) in enumerate(zip(codes, groups, strict=True)):
                sums[i][k] += np.bincount(g, weights=weights, minlength=n)
    return [_rows(calls, rows, counts[i], first[i], sums[i], label) for i, (_, _, label) in enumerate(groups)]


def _rows(
    calls: dict[str, Any],
    rows: np.ndarray,
    counts: np.ndarray,
    first: np.ndarray,
    sums: dict[str, np.ndarray],
    label: Callable[[int], dict[str, Any]],
) -> list[dict[str, Any]]:
    """One table's rows from its per-code ``counts``, ``first`` call (a position in ``rows``) and
    ``sums``: the codes with calls, by first call, then sorted as ``views.operators`` sorts."""
    keys = np.flatnonzero(counts)
    order = keys[np.argsort(first[keys], kind="stable")]  # groups by first appearance
    lists = {k: v[order].tolist() for k, v in sums.items()}
    eligible = calls["tc_eligible"][rows[first[order]]].tolist()
    out = []
    for i, (g, n) in enumerate(zip(order.tolist(), counts[order].tolist(), strict=True)):
        dev_self, dev_total = lists["device_self_us"][i], lists["device_total_us"][i]
        out.append({
            **label(g),
            "calls": n,
            "device_self_us": dev_self,
            "device_total_us": dev_total,
            "host_self_us": lists["host_self_us"][i],
            "host_total_us": lists["host_total_us"][i],
            "tc_eligible": bool(eligible[i]),
            "tc_self_pct": 100.0 * lists["tc_self_us"][i] / dev_self if dev_self > 0 else 0,
            "tc_total_pct": 100.0 * lists["tc_total_us"][i] / dev_total if dev_total > 0 else 0,
        })  # fmt: skip
    out.sort(key=lambda r: -r["device_self_us"] if r["device_self_us"] else -r["host_self_us"])
    return out


__all__ = ["FIGURES", "operator_calls", "operators_between", "pack", "pack_into", "unpack"]
