"""The plugin's Memory view: per operator, the memory events table and the memory curve per device.

As its ``MemoryParser`` (``memory_parser.py``): operators self and with callees.

The records are attached to operators as the plugin's walk attaches them (``attach``: the deepest
node of the record's thread holding its ts, found by ``searchsorted`` over the tree's pre-order and
a climb to the first ancestor that holds it; a record whose node is no operator is dropped).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis import scratch
from profilerhub_analysis.tbviews.parse import TbTrace
from profilerhub_analysis.tbviews.tree import Forest


def integral(values: np.ndarray) -> list[Any]:
    """``values`` as a JSON column: ints where every value is a whole number (byte counts are read
    as floats: 131072, not 131072.0), floats otherwise; NaN is None either way."""
    values = np.asarray(values, dtype=np.float64)
    present = ~np.isnan(values)
    kept = values[present]
    whole = bool(np.all((kept == np.trunc(kept)) & (np.abs(kept) < 2.0**53)))
    column = np.where(present, values, 0).astype(np.int64).tolist() if whole else values.tolist()
    if present.all():
        return column
    return [v if ok else None for v, ok in zip(column, present.tolist(), strict=True)]


def attach(trace: TbTrace, forest: Forest) -> tuple[np.ndarray, np.ndarray]:
    """(node of each memory record or -1, the nodes the plugin's walk visits: every ancestor of a
    record's deepest node, that node included). A record counts only on an operator (``op``)."""
    mem = trace.memory
    n_rec = len(mem["ts"])
    deepest = np.full(n_rec, -1, dtype=np.int64)
    total = len(forest.ts)
    rank = np.full(len(trace.tids) + 1, -1, dtype=np.int64)
    rank[forest.root_tids] = np.arange(len(forest.root_tids))
    pre = forest.preorder
    pre_thread = forest.thread[pre]
    rec_thread = rank[mem["tid"]] if n_rec else np.empty(0, np.int64)
    for th in np.unique(rec_thread[rec_thread >= 0]).tolist():
        recs = np.flatnonzero(rec_thread == th)
        lo, hi = np.searchsorted(pre_thread, th, "left"), np.searchsorted(pre_thread, th, "right")
        nodes = pre[lo:hi]
        t = mem["ts"][recs]
        at = np.searchsorted(forest.ts[nodes], t, "right") - 1
        cand = np.where(at >= 0, nodes[np.maximum(at, 0)], forest.roots[th])
        while True:
            out = ~((forest.ts[cand] <= t) & (t < forest.end[cand]))
            if not out.any():
                break
            cand[out] = forest.parent[cand[out]]
        deepest[recs] = cand
    visited = scratch.full(total, False, bool)
    front = np.unique(deepest[deepest >= 0])
    while len(front):
        visited[front] = True
        up = forest.parent[front]
        up = up[up >= 0]
        front = np.unique(up[~visited[up]])
    node = np.where(deepest >= 0, deepest, 0)
    on_op = (deepest >= 0) & forest.is_operator[node]
    return np.where(on_op, deepest, -1), visited


def memory(trace: TbTrace, forest: Forest, attached: tuple[np.ndarray, np.ndarray] | None = None
           ) -> list[dict[str, Any]]:  # fmt: skip
    """Per (device, operator): the memory records of its calls, self and with its descendants."""
    node_of, visited = attached if attached is not None else attach(trace, forest)
    mem = trace.memory
    fields = ("self_size_increase_bytes", "self_allocation_size_bytes", "self_allocation_count",
              "size_increase_bytes", "allocation_size_bytes", "allocation_count")  # fmt: skip
    order, kind = forest.order, forest.type  # children before parents, as the plugin's totals go
    at_seen = scratch.select(len(order), lambda a, b: visited[order[a:b]] & (kind[order[a:b]] != 0))
    seen = order[at_seen]  # the visited nodes: as many as the records' nodes and their callers
    del at_seen
    ops = seen[forest.is_operator[seen]]
    names = forest.name[ops]
    calls = np.bincount(names, minlength=len(trace.names))
    idx = scratch.full(len(forest.ts), -1, np.int64)
    idx[seen] = np.arange(len(seen))
    by_depth = np.argsort(-forest.depth[seen], kind="stable")
    rows = []
    for device in range(len(trace.mem_devices)):
        label = trace.mem_devices[device]
        if label is None:
            continue
        mine = (node_of >= 0) & (mem["device"] == device)
        if not mine.any():
            continue
        at = idx[node_of[mine]]
        nbytes = mem["nbytes"][mine]
        pos = nbytes > 0
        own = np.zeros((len(seen), 3))
        own[:, 0] = np.bincount(at, weights=nbytes, minlength=len(seen))
        own[:, 1] = np.bincount(at[pos], weights=nbytes[pos], minlength=len(seen))
        own[:, 2] = np.bincount(at[pos], minlength=len(seen))
        has = np.zeros(len(seen), dtype=bool)
        has[at] = True
        tot = own.copy()
        d = forest.depth[seen][by_depth]
        cuts = np.flatnonzero(np.r_[True, d[1:] != d[:-1], True])
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            xs = by_depth[a:b]
            ps = idx[forest.parent[seen[xs]]]
            keep = ps >= 0
            np.add.at(tot, ps[keep], tot[xs[keep]])
            has[ps[keep][has[xs[keep]]]] = True
        row_ops = np.flatnonzero(forest.is_operator[seen] & has)
        if not len(row_ops):
            continue
        op_names = forest.name[seen[row_ops]]
        uniq, first, inverse = np.unique(op_names, return_index=True, return_inverse=True)
        figures = np.column_stack([np.bincount(inverse, weights=col, minlength=len(uniq))
                                   for col in (*own[row_ops].T, *tot[row_ops].T)])  # fmt: skip
        for g in np.argsort(first, kind="stable").tolist():
            values = figures[g].tolist()
            if any(values):
                row: dict[str, Any] = {
                    "device": label,
                    "name": trace.names[uniq[g]],
                    "calls": int(calls[uniq[g]]),
                }
                row.update(
                    {f: int(v) if float(v).is_integer() else v for f, v in zip(fields, values, strict=True)}
                )
                rows.append(row)
    return sorted(rows, key=lambda r: (r["device"], -r["size_increase_bytes"]))


MAX_MEMORY_EVENTS = 20_000
"""Memory events kept per trace (the largest, by size): the table stays readable and the views small."""


def memory_events(trace: TbTrace, forest: Forest, attached: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> dict[str, Any]:  # fmt: skip
    """The plugin's memory events table: each allocation paired with its free (same device and
    address, in time order), with the operator it happened in (the plugin's walk, ``attach``), its
    size and lifetime. An allocation never freed has ``free_us`` None; a free of memory allocated
    before the profile has ``alloc_us`` None. At most ``MAX_MEMORY_EVENTS``, the largest; ``total``
    counts all."""
    node_of, _ = attached if attached is not None else attach(trace, forest)
    mem = trace.memory
    none_device = trace.mem_devices.index(None) if None in trace.mem_devices else -1
    addr_none = np.fromiter((v is None for v in trace.values), dtype=bool, count=len(trace.values))
    nbytes = mem["nbytes"]
    usable = (mem["device"] != none_device) & (nbytes != 0)
    if len(addr_none):
        usable &= ~addr_none[mem["addr"]]
    recs = np.flatnonzero(usable)
    alloc_of: list[int] = []
    free_of: list[int] = []
    open_: dict[tuple[int, int], int] = {}
    for r, device, addr, size in zip(recs.tolist(), mem["device"][recs].tolist(), mem["addr"][recs].tolist(),
                                     nbytes[recs].tolist(), strict=True):  # fmt: skip
        key = (device, addr)
        if size > 0:
            if key in open_:  # allocated again without a free between: the first stays alive
                alloc_of.append(open_[key])
                free_of.append(-1)
            open_[key] = r
        else:
            alloc_of.append(open_.pop(key, -1))
            free_of.append(r)
    alloc_of.extend(open_.values())
    free_of.extend([-1] * len(open_))
    a, f = np.asarray(alloc_of, dtype=np.int64), np.asarray(free_of, dtype=np.int64)
    first = np.where(a >= 0, a, f)
    size = np.abs(nbytes[first]) if len(first) else np.empty(0)
    keep = np.argsort(-size, kind="stable")[:MAX_MEMORY_EVENTS]
    when = np.where(a[keep] >= 0, mem["ts"][np.maximum(a[keep], 0)], mem["ts"][np.maximum(f[keep], 0)])
    keep = keep[np.argsort(when, kind="stable")]
    rows = []
    sizes = integral(size[keep])
    for i, size_i in zip(keep.tolist(), sizes, strict=True):
        ai, fi = int(a[i]), int(f[i])
        a_us = float(mem["ts"][ai]) if ai >= 0 else None
        f_us = float(mem["ts"][fi]) if fi >= 0 else None
        node = int(node_of[ai]) if ai >= 0 else -1
        rows.append({
            "device": trace.mem_devices[mem["device"][first[i]]],
            "operator": trace.names[forest.name[node]] if node >= 0 else None,
            "size_bytes": size_i,
            "alloc_us": a_us,
            "free_us": f_us,
            "duration_us": f_us - a_us if a_us is not None and f_us is not None else None,
        })  # fmt: skip
    return {"events": rows, "total": len(first)}


CURVE_POINTS = 2000
"""Points kept per memory curve: each the largest value of its time bucket, so peaks survive."""


def memory_curve(trace: TbTrace) -> list[dict[str, Any]]:
    """Per device, memory allocated and reserved over time (the records' running totals, bytes),
    at most ``CURVE_POINTS`` points (bucket maxima), and the peak of each."""
    mem = trace.memory
    out = []
    labelled = [(label, code) for code, label in enumerate(trace.mem_devices) if label is not None]
    for device, code in sorted(labelled):
        mine = (mem["device"] == code) & ~np.isnan(mem["allocated"])
        if not mine.any():
            continue
        t = mem["ts"][mine]
        alloc = mem["allocated"][mine]
        res = mem["reserved"][mine]
        peak = int(np.argmax(alloc))
        peak_bytes, peak_us, records = integral(alloc[peak : peak + 1])[0], float(t[peak]), len(t)
        if len(t) > CURVE_POINTS:
            bucket = np.minimum(
                ((t - t[0]) / max(t[-1] - t[0], 1e-9) * CURVE_POINTS).astype(np.int64), CURVE_POINTS - 1
            )
            starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
            t = t[starts]
            alloc = np.maximum.reduceat(alloc, starts)
            res = np.fmax.reduceat(res, starts)
        out.append(
            {
                "device": device,
                "t_us": t.tolist(),
                "allocated_bytes": integral(alloc),
                "reserved_bytes": integral(res),
                "peak_allocated_bytes": peak_bytes,
                "peak_us": peak_us,
                "records": records,
            }
        )
    return out


__all__ = [
    "CURVE_POINTS",
    "MAX_MEMORY_EVENTS",
    "attach",
    "integral",
    "memory",
    "memory_curve",
    "memory_events",
]
