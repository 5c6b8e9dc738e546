"""The plugin's module view: time per ``nn.Module``, as a tree of the model's modules.

A trace has modules when it was recorded with ``with_stack=True`` and ``with_modules=True`` (the
SDK's ``"full"`` preset): Kineto then writes a ``python_function`` event per Python call, and those
of a module's ``forward`` carry ``"Python module id"`` and are named ``nn.Module: <Class>_<n>``.

How the plugin builds it (kineto ``tb_plugin`` ``module_op.py``), and so how this does:

1. **Hierarchy**, from the Python call topology (``Python id`` / ``Python parent id``) of every
   ``python_function`` event: from each leaf, walk up the parents; a module's module-parent is the
   nearest module above it. Each root module gives one tree of (name, module id) nodes; trees equal
   in shape count once (every step calls the same modules).
2. **Figures**, from the call trees (``tree.py``): the module nodes reached from a thread's root
   through steps and modules only (a module called inside an operator is not counted), summed by
   (name, module id): calls, direct child operators, host total and self time, device total and self
   time.

A module its parent calls twice in the same way is one row (the plugin lists it twice, with the
same figures). Where the two disagree (a module in the hierarchy that no call tree reached: it
overlapped another range and was dropped), the plugin fails with a ``KeyError``; this shows the
module with zero calls.
Roots come in the order they first run (the plugin's order comes from a ``set``, so it varies).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from profilerhub_analysis.tbviews.parse import T, TbTrace
from profilerhub_analysis.tbviews.tree import Forest

_PREFIX = "nn.Module: "
_Key = tuple[int, int]  # (event name, module id), as codes into the trace's names and values


class _Py(NamedTuple):
    """A ``python_function`` event of the Python call topology."""

    module: bool
    parent: int  # python parent id (a code into the trace's values)
    key: _Key
    ts: float


def modules(trace: TbTrace, forest: Forest) -> list[dict[str, Any]] | None:
    """The module tree with each module's figures, or ``None`` when the trace has no modules."""
    roots = _hierarchy(trace)
    if not roots:
        return None
    stats = _stats(trace, forest)
    if not stats:
        return None
    return [_row(trace, root, stats) for root in roots]


class _Module:
    __slots__ = ("children", "key")

    def __init__(self, key: _Key) -> None:
        self.key = key
        self.children: list[_Module] = []

    def shape(self) -> tuple[Any, ...]:
        """What makes two trees the same (the plugin's ``Module.__eq__``), without recursion."""
        out: list[Any] = []
        todo: list[Any] = [self]
        while todo:
            item = todo.pop()
            if isinstance(item, _Module):
                out.append(item.key)
                todo.append(")")
                todo.extend(reversed(item.children))
            else:
                out.append(item)
        return tuple(out)


def _hierarchy(trace: TbTrace) -> list[_Module]:
    values = trace.values
    none = values.index(None) if None in values else -1
    mods = np.flatnonzero(trace.types == T.MODULE)
    rows = trace.aux[mods]
    pyid = trace.attrs["pyid"][rows] if len(rows) else np.empty(0, np.int32)
    keep = pyid != none
    mods, rows, pyid = mods[keep], rows[keep], pyid[keep]
    if not len(mods):
        return []
    by_id: dict[int, _Py] = {}
    for pid, parent in zip(trace.python["pyid"].tolist(), trace.python["pyparent"].tolist(), strict=True):
        by_id[pid] = _Py(False, parent, (-1, -1), 0.0)
    for pid, parent, name, module, ts in zip(
        pyid.tolist(), trace.attrs["pyparent"][rows].tolist(), trace.name[mods].tolist(),
        trace.attrs["module"][rows].tolist(), trace.ts[mods].tolist(), strict=True,
    ):  # fmt: skip
        by_id[pid] = _Py(True, parent, (name, module), ts)
    has_child: set[int] = {e.parent for e in by_id.values()}
    leaves = [pid for pid in by_id if pid not in has_child]

    parent_of: dict[int, int | None] = {}  # module python id -> its module parent's python id (or None)
    seen: set[tuple[int, int | None]] = set()
    for leaf in leaves:
        at: int | None = leaf
        current: int | None = None
        while at is not None:
            ev = by_id[at]
            if ev.module:
                if current is not None:
                    parent_of[current] = at
                current = at
                parent_of.setdefault(at, None)
            mark = (at, current)
            if mark in seen:
                break
            seen.add(mark)
            at = ev.parent if ev.parent in by_id else None

    children: dict[int, list[int]] = {pid: [] for pid in parent_of}
    for child, parent_id in parent_of.items():
        if parent_id is not None:
            children[parent_id].append(child)
    start = lambda pid: by_id[pid].ts  # noqa: E731
    unique: dict[tuple[Any, ...], _Module] = {}
    for root in sorted((p for p, parent in parent_of.items() if parent is None), key=start):
        tree = _tree(root, by_id, children, start)
        unique.setdefault(tree.shape(), tree)
    return list(unique.values())


def _tree(root: int, by_id: dict[int, _Py], children: dict[int, list[int]], start: Any) -> _Module:
    top = _Module(by_id[root].key)
    todo = [(root, top)]
    while todo:
        pid, module = todo.pop()
        for child in sorted(children[pid], key=start):
            made = _Module(by_id[child].key)
            module.children.append(made)
            todo.append((child, made))
    return top


def _stats(trace: TbTrace, forest: Forest) -> dict[_Key, dict[str, float]]:
    """Per module (name, id), summed over the module nodes reached from a root through steps and
    modules only (the plugin's walk), in its pre-order."""
    pre = forest.preorder
    reach = np.zeros(len(forest.ts), dtype=bool)
    reach[forest.roots] = True
    walkable = np.isin(forest.type, (T.STEP, T.MODULE))
    by_depth = pre[np.argsort(forest.depth[pre], kind="stable")]
    d = forest.depth[by_depth]
    cuts = np.flatnonzero(np.r_[True, d[1:] != d[:-1], True]) if len(d) else np.zeros(1, np.int64)
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        xs = by_depth[a:b]
        reach[xs] = walkable[xs] & reach[forest.parent[xs]]
    mods = pre[reach[pre] & (forest.type[pre] == T.MODULE)]
    if not len(mods):
        return {}
    ops = np.bincount(forest.parent[pre[forest.is_operator[pre]]], minlength=len(forest.ts))
    module_code = trace.attrs["module"][trace.aux[forest.event[mods]]]
    out: dict[_Key, dict[str, float]] = {}
    for node, name, module in zip(
        mods.tolist(), forest.name[mods].tolist(), module_code.tolist(), strict=True
    ):
        row = out.get((name, module))
        if row is None:
            row = out[(name, module)] = dict.fromkeys(
                ("calls", "operators", "host_total_us", "host_self_us", "device_total_us", "device_self_us"),
                0.0,
            )
        row["calls"] += 1
        row["operators"] += float(ops[node])
        row["host_total_us"] += float(forest.end[node] - forest.ts[node])
        row["host_self_us"] += float(forest.host_self[node])
        row["device_total_us"] += float(forest.device_total[node])
        row["device_self_us"] += float(forest.device_self[node])
    return out


def _row(trace: TbTrace, root: _Module, stats: dict[_Key, dict[str, float]]) -> dict[str, Any]:
    def make(module: _Module) -> dict[str, Any]:
        name, module_id = trace.names[module.key[0]], trace.values[module.key[1]]
        figures = stats.get(module.key) or {}
        calls = int(figures.get("calls", 0))
        device, host = figures.get("device_total_us", 0.0), figures.get("host_total_us", 0.0)
        mean = (device if device > 0 else host) / calls if calls else 0.0
        return {
            "name": name[len(_PREFIX):] if name.startswith(_PREFIX) else name,
            "module_id": module_id,
            "calls": calls,
            "operators": int(figures.get("operators", 0)),
            **{k: round(figures.get(k, 0.0), 3) for k in
               ("host_total_us", "host_self_us", "device_total_us", "device_self_us")},
            "mean_us": round(mean, 3),
            "children": [],
        }  # fmt: skip

    top = make(root)
    todo = [(root, top)]
    while todo:
        module, row = todo.pop()
        shapes: set[tuple[Any, ...]] = set()
        for child in module.children:
            shape = child.shape()
            if shape in shapes:
                continue  # a module called twice by its parent: one row (the plugin shows two)
            shapes.add(shape)
            made = make(child)
            row["children"].append(made)
            todo.append((child, made))
    return top


__all__ = ["modules"]
