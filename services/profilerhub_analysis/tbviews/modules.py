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

from typing import Any

from profilerhub_analysis.tbviews.parse import Event, T, TbTrace
from profilerhub_analysis.tbviews.tree import Forest, Node

_PREFIX = "nn.Module: "
_Key = tuple[str, Any]  # (event name, module id)


def modules(trace: TbTrace, forest: Forest) -> list[dict[str, Any]] | None:
    """The module tree with each module's figures, or ``None`` when the trace has no modules."""
    roots = _hierarchy(trace)
    if not roots:
        return None
    stats = _stats(forest)
    if not stats:
        return None
    return [_row(root, stats) for root in roots]


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
    modules = [e for e in trace.events if e.type == T.MODULE and e.args.python_id is not None]
    if not modules:
        return []
    by_id: dict[Any, Event] = {e.args.python_id: e for e in trace.python_functions}
    by_id.update((e.args.python_id, e) for e in modules)
    has_child: set[Any] = {e.args.python_parent_id for e in by_id.values()}
    leaves = [pid for pid in by_id if pid not in has_child]

    parent_of: dict[Any, Any] = {}  # module python id -> its module parent's python id (or None)
    seen: set[tuple[Any, Any]] = set()
    for leaf in leaves:
        ev: Event | None = by_id[leaf]
        current: Event | None = None
        while ev is not None:
            pid = ev.args.python_id
            if ev.type == T.MODULE:
                if current is not None:
                    parent_of[current.args.python_id] = pid
                current = ev
                parent_of.setdefault(pid, None)
            mark = (pid, None if current is None else current.args.python_id)
            if mark in seen:
                break
            seen.add(mark)
            ev = by_id.get(ev.args.python_parent_id)

    children: dict[Any, list[Any]] = {pid: [] for pid in parent_of}
    for child, parent in parent_of.items():
        if parent is not None:
            children[parent].append(child)
    start = lambda pid: by_id[pid].ts  # noqa: E731
    unique: dict[tuple[Any, ...], _Module] = {}
    for root in sorted((p for p, parent in parent_of.items() if parent is None), key=start):
        tree = _tree(root, by_id, children, start)
        unique.setdefault(tree.shape(), tree)
    return list(unique.values())


def _tree(root: Any, by_id: dict[Any, Event], children: dict[Any, list[Any]], start: Any) -> _Module:
    def make(pid: Any) -> _Module:
        ev = by_id[pid]
        return _Module((ev.name, ev.args.module_id))

    top = make(root)
    todo = [(root, top)]
    while todo:
        pid, module = todo.pop()
        for child in sorted(children[pid], key=start):
            made = make(child)
            module.children.append(made)
            todo.append((child, made))
    return top


def _stats(forest: Forest) -> dict[_Key, dict[str, float]]:
    out: dict[_Key, dict[str, float]] = {}
    for root in forest.roots.values():
        todo = [c for c in reversed(root.children) if c.type in (T.STEP, T.MODULE)]
        while todo:
            node = todo.pop()
            if node.type == T.MODULE:
                _add(out, node)
            todo.extend(c for c in reversed(node.children) if c.type in (T.STEP, T.MODULE))
    return out


def _add(out: dict[_Key, dict[str, float]], node: Node) -> None:
    assert node.event is not None
    key = (node.name, node.event.args.module_id)
    row = out.get(key)
    if row is None:
        row = out[key] = dict.fromkeys(
            ("calls", "operators", "host_total_us", "host_self_us", "device_total_us", "device_self_us"), 0.0
        )
    row["calls"] += 1
    row["operators"] += sum(1 for c in node.children if c.is_operator)
    row["host_total_us"] += node.end - node.ts
    row["host_self_us"] += node.host_self_us
    row["device_total_us"] += node.device_us
    row["device_self_us"] += node.device_self_us


def _row(root: _Module, stats: dict[_Key, dict[str, float]]) -> dict[str, Any]:
    def make(module: _Module) -> dict[str, Any]:
        name, module_id = module.key
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
