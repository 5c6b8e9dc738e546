"""The plugin's Memory view: per operator, the memory events table and the memory curve per device.

As its ``MemoryParser`` (``memory_parser.py``): operators self and with callees.

The records are attached to operators by the plugin's walk (``_attach``: the deepest node holding a
record's ts); ``memory`` must run before ``memory_events``, which names each event's operator.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from profilerhub_analysis.tbviews.parse import MemoryRecord, TbTrace
from profilerhub_analysis.tbviews.tree import Forest, Node


def memory(trace: TbTrace, forest: Forest) -> list[dict[str, Any]]:
    """Per (device, operator): the memory records of its calls, self and with its descendants."""
    records: dict[Any, list[MemoryRecord]] = defaultdict(list)
    for r in trace.memory:
        records[r.tid].append(r)
    visited: set[int] = set()
    for tid, recs in records.items():
        _attach(forest.roots.get(tid), recs, visited)
    totals: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0] * 6))
    calls: dict[str, int] = defaultdict(int)
    for root in forest.roots.values():
        for top in root.children:
            for node, own in _memory_totals(top, visited):
                if node.is_operator:
                    calls[node.name] += 1
                    for device, figures in own.items():
                        acc = totals[device][node.name]
                        for i, v in enumerate(figures):
                            acc[i] += v
    fields = ("self_size_increase_bytes", "self_allocation_size_bytes", "self_allocation_count",
              "size_increase_bytes", "allocation_size_bytes", "allocation_count")  # fmt: skip
    rows = []
    for device, by_name in totals.items():
        for name, figures in by_name.items():
            if any(figures):
                row: dict[str, Any] = {"device": device, "name": name, "calls": calls[name]}
                row.update(
                    {f: int(v) if float(v).is_integer() else v for f, v in zip(fields, figures, strict=True)}
                )
                rows.append(row)
    return sorted(rows, key=lambda r: (r["device"], -r["size_increase_bytes"]))


MAX_MEMORY_EVENTS = 20_000
"""Memory events kept per trace (the largest, by size): the table stays readable and the views small."""


def memory_events(trace: TbTrace) -> dict[str, Any]:
    """The plugin's memory events table: each allocation paired with its free (same device and
    address, in time order), with the operator it happened in (after ``memory``'s walk), its size and
    lifetime. An allocation never freed has ``free_us`` None; a free of memory allocated before the
    profile has ``alloc_us`` None. At most ``MAX_MEMORY_EVENTS``, the largest; ``total`` counts all."""
    open_: dict[tuple[Any, Any], MemoryRecord] = {}
    rows: list[dict[str, Any]] = []
    for r in trace.memory:
        if r.device is None or r.addr is None or not r.nbytes:
            continue
        key = (r.device, r.addr)
        if r.nbytes > 0:
            if key in open_:  # allocated again without a free between: the first stays alive
                rows.append(_memory_event(open_[key], None))
            open_[key] = r
        else:
            rows.append(_memory_event(open_.pop(key, None), r))
    rows.extend(_memory_event(a, None) for a in open_.values())
    rows.sort(key=lambda e: -e["size_bytes"])
    kept = rows[:MAX_MEMORY_EVENTS]
    kept.sort(key=lambda e: e["alloc_us"] if e["alloc_us"] is not None else e["free_us"])
    return {"events": kept, "total": len(rows)}


def _memory_event(alloc: MemoryRecord | None, free: MemoryRecord | None) -> dict[str, Any]:
    first = alloc if alloc is not None else free
    assert first is not None
    a_us = alloc.ts if alloc is not None else None
    f_us = free.ts if free is not None else None
    return {
        "device": first.device,
        "operator": alloc.op if alloc is not None else None,
        "size_bytes": abs(first.nbytes),
        "alloc_us": a_us,
        "free_us": f_us,
        "duration_us": f_us - a_us if a_us is not None and f_us is not None else None,
    }


CURVE_POINTS = 2000
"""Points kept per memory curve: each the largest value of its time bucket, so peaks survive."""


def memory_curve(trace: TbTrace) -> list[dict[str, Any]]:
    """Per device, memory allocated and reserved over time (the records' running totals, bytes),
    at most ``CURVE_POINTS`` points (bucket maxima), and the peak of each."""
    by_device: dict[str, list[MemoryRecord]] = defaultdict(list)
    for r in trace.memory:
        if r.device is not None and r.allocated is not None:
            by_device[r.device].append(r)
    out = []
    for device in sorted(by_device):
        recs = by_device[device]
        t = np.array([r.ts for r in recs], dtype=np.float64)
        alloc = np.array([r.allocated for r in recs], dtype=np.float64)
        res = np.array([np.nan if r.reserved is None else r.reserved for r in recs], dtype=np.float64)
        peak = int(np.argmax(alloc))
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
                "allocated_bytes": alloc.tolist(),
                "reserved_bytes": [None if np.isnan(v) else v for v in res.tolist()],
                "peak_allocated_bytes": float(recs[peak].allocated or 0),
                "peak_us": recs[peak].ts,
                "records": len(recs),
            }
        )
    return out


def _attach(root: Node | None, recs: list[MemoryRecord], visited: set[int]) -> None:
    """The plugin's walk (``MemoryParser.update_node``): each record to the deepest node holding its
    ts ([start, end)); every node walked into is *visited*; a record whose node is no operator is dropped."""
    current = root
    stack: list[tuple[Node, int]] = []
    child = 0
    if current is not None:
        visited.add(id(current))
    i = 0
    while i < len(recs):
        rec = recs[i]
        if current is None:
            i += 1
            continue
        if rec.ts < current.ts:
            i += 1
            continue
        if rec.ts >= current.end:
            if stack:
                current, child = stack.pop()
                child += 1
            else:
                current = None
            continue
        while child < len(current.children):
            c = current.children[child]
            if rec.ts < c.ts:
                break
            if rec.ts >= c.end:
                child += 1
            else:
                visited.add(id(c))
                stack.append((current, child))
                current, child = c, 0
        if current.is_operator:
            current.memory.append(rec)
            rec.op = current.name
        i += 1


def _memory_totals(top: Node, visited: set[int]) -> list[tuple[Node, dict[str, list[float]]]]:
    """(node, {device: [3 self figures, 3 totals]}) for every visited node under ``top``."""
    out: list[tuple[Node, dict[str, list[float]]]] = []
    figures: dict[int, dict[str, list[float]]] = {}
    order: list[Node] = []
    todo = [top]
    while todo:
        node = todo.pop()
        if id(node) not in visited:
            continue
        order.append(node)
        todo.extend(node.children)
    for node in reversed(order):  # children before parents
        own: dict[str, list[float]] = defaultdict(lambda: [0.0] * 6)
        if node.is_operator:
            for rec in node.memory:
                if rec.device is None:
                    continue
                f = own[rec.device]
                f[0] += rec.nbytes
                if rec.nbytes > 0:
                    f[1] += rec.nbytes
                    f[2] += 1
            for f in own.values():
                f[3], f[4], f[5] = f[0], f[1], f[2]
        for c in node.children:
            for device, cf in figures.get(id(c), {}).items():
                f = own[device]
                f[3] += cf[3]
                f[4] += cf[4]
                f[5] += cf[5]
        figures[id(node)] = own
        out.append((node, own))
    return out


__all__ = ["CURVE_POINTS", "MAX_MEMORY_EVENTS", "memory", "memory_curve", "memory_events"]
