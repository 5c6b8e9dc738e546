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
from typing import Any

import numpy as np

from profilerhub_analysis.tbviews.tree import Forest

FIGURES = ("host_self_us", "host_total_us", "device_self_us", "device_total_us", "tc_self_us", "tc_total_us")


def operator_calls(forest: Forest) -> dict[str, Any]:
    """Columns ``ts, name, shape, tc_eligible`` and ``FIGURES`` (one row per call, the plugin's
    order), and the ``names`` and ``shapes`` the two index columns point into."""
    trace = forest.trace
    ops = forest.operators
    events = forest.event[ops]
    dims = trace.attrs["dims"][trace.aux[events]] if len(ops) else np.empty(0, np.int32)
    name_codes, name = np.unique(forest.name[ops], return_inverse=True)
    name_first = _renumber_by_first(name)
    shape_codes, shape = np.unique(dims, return_inverse=True)
    shape_first = _renumber_by_first(shape)
    out: dict[str, Any] = {
        "ts": forest.ts[ops].astype(np.float64),
        "name": name_first[0][name].astype(np.int32),
        "shape": shape_first[0][shape].astype(np.int32),
        "tc_eligible": forest.tc_eligible[ops].astype(bool),
        "host_self_us": forest.host_self[ops],
        "host_total_us": forest.end[ops] - forest.ts[ops],
        "device_self_us": forest.device_self[ops],
        "device_total_us": forest.device_total[ops],
        "tc_self_us": forest.tc_self[ops],
        "tc_total_us": forest.tc_total[ops],
    }
    out["names"] = [trace.names[c] for c in name_codes[name_first[1]].tolist()]
    raws = [trace.raws[c] for c in shape_codes[shape_first[1]].tolist()]
    out["shapes"] = [json.loads(s) if s else [] for s in raws]
    return out


def _renumber_by_first(inverse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(new number of each old group, old group of each new number): groups numbered in order of
    their first row, as a dict filled row by row numbers them."""
    n = int(inverse.max()) + 1 if len(inverse) else 0
    first = np.full(n, len(inverse), dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(len(inverse)))
    old = np.argsort(first, kind="stable")
    new = np.empty(n, dtype=np.int64)
    new[old] = np.arange(n)
    return new, old


def pack(calls: dict[str, Any]) -> bytes:
    arrays: dict[str, Any] = {k: v for k, v in calls.items() if isinstance(v, np.ndarray)}
    text = json.dumps({"names": calls["names"], "shapes": calls["shapes"]}, separators=(",", ":"))
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays, labels=np.frombuffer(text.encode(), dtype=np.uint8))
    return buf.getvalue()


def unpack(data: bytes) -> dict[str, Any]:
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        out: dict[str, Any] = {k: npz[k] for k in npz.files if k != "labels"}
        out.update(json.loads(npz["labels"].tobytes()))
    return out


def operators_between(
    calls: dict[str, Any], t0: float | None = None, t1: float | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(by name, by name + input shape, calls counted) over the calls starting in ``[t0, t1)``."""
    ts = calls["ts"]
    keep = np.ones(len(ts), dtype=bool)
    if t0 is not None:
        keep &= ts >= t0
    if t1 is not None:
        keep &= ts < t1
    rows = np.flatnonzero(keep)
    figures = {k: calls[k][rows] for k in FIGURES}  # taken once for both tables
    names = calls["name"][rows]
    by_name = _table(calls, names, len(calls["names"]), rows, figures, lambda g: {"name": calls["names"][g]})
    n_shapes = max(len(calls["shapes"]), 1)
    pair = names.astype(np.int64) * n_shapes + calls["shape"][rows]
    shaped = lambda g: {"name": calls["names"][g // n_shapes], "input_shape": calls["shapes"][g % n_shapes]}  # noqa: E731
    by_shape = _table(calls, pair, len(calls["names"]) * n_shapes, rows, figures, shaped)
    return by_name, by_shape, len(rows)


def _groups(group: np.ndarray, n_codes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(group, return_index=True, return_inverse=True)`` for codes in ``[0, n_codes)``:
    by counting where the codes are few enough (a tenth of the sort's time on 2 M calls)."""
    if n_codes > max(1 << 22, 4 * len(group)):
        keys, first, inverse = np.unique(group, return_index=True, return_inverse=True)
        return keys, first, inverse
    counts = np.bincount(group, minlength=n_codes)
    keys = np.flatnonzero(counts)
    renumber = np.full(n_codes, -1, dtype=np.int64)
    renumber[keys] = np.arange(len(keys))
    inverse = renumber[group]
    first = np.full(len(keys), len(group), dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(len(group)))
    return keys, first, inverse


def _table(
    calls: dict[str, Any],
    group: np.ndarray,
    n_codes: int,
    rows: np.ndarray,
    figures: dict[str, np.ndarray],
    label: Any,
) -> list[dict[str, Any]]:
    """One row per group in order of its first call (``views.operators``' dict order), sorted as
    there: device self time, else host self time, largest first (stable). Sums are numpy's, so
    they may differ from the plugin's call-order sums in the last bit."""
    if not len(rows):
        return []
    keys, first, inverse = _groups(group, n_codes)
    order = np.argsort(first, kind="stable")  # groups by first appearance
    counts = np.bincount(inverse, minlength=len(keys))
    sums = {k: np.bincount(inverse, weights=figures[k], minlength=len(keys)).tolist() for k in FIGURES}
    out = []
    for g in order.tolist():
        dev_self, dev_total = sums["device_self_us"][g], sums["device_total_us"][g]
        out.append({
            **label(int(keys[g])),
            "calls": int(counts[g]),
            "device_self_us": dev_self,
            "device_total_us": dev_total,
            "host_self_us": sums["host_self_us"][g],
            "host_total_us": sums["host_total_us"][g],
            "tc_eligible": bool(calls["tc_eligible"][rows[first[g]]]),
            "tc_self_pct": 100.0 * sums["tc_self_us"][g] / dev_self if dev_self > 0 else 0,
            "tc_total_pct": 100.0 * sums["tc_total_us"][g] / dev_total if dev_total > 0 else 0,
        })  # fmt: skip
    out.sort(key=lambda r: -r["device_self_us"] if r["device_self_us"] else -r["host_self_us"])
    return out


__all__ = ["FIGURES", "operator_calls", "operators_between", "pack", "unpack"]
