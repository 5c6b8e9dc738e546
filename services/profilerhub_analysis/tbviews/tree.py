"""The plugin's call trees: one per thread, runtimes hung on operators, GPU ops on runtimes.

How (``../shared/oracle/README.md``, "How the plugin reads a trace", 2-4):

1. Walk the events in order. A GPU op joins the runtime with its ``correlation`` (the runtime seen
   last with that id, or the first one that comes later). A runtime is kept by ``External id``.
2. Each runtime hangs on the *first* node (threads in order of their first node, nodes in time
   order) with its External id; one with External id 0 also hangs on its own thread's root.
   Kernels whose correlation no runtime has are *staled*: they hang, through one dummy runtime, on
   the root of every thread tree that holds a step.
3. Per thread, nodes sorted by (ts, -end) nest by containment with a stack; a node that starts
   inside the open node but ends after it is dropped. Then an operator whose only child is an
   operator of the same name absorbs it (the child's children and runtimes replace its own).
4. ``fill_stats`` works bottom-up: host self time, device self/total time, tensor-core time and
   the tensor-core eligibility that an operator inherits from a child or a tensor-core launch.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from profilerhub_analysis.tbviews.parse import COLLECTIVES, GPU_TYPES, Event, T, TbTrace, is_dataloader
from profilerhub_analysis.tbviews.tensor_cores import TC_KERNEL, TC_OPERATORS

_EXCLUDED = frozenset({"DataParallel.forward", "DistributedDataParallel.forward"})
ROOT_NAME = "CallTreeRoot"


@dataclass(slots=True, eq=False)
class Runtime:
    event: Event | None
    gpu_ops: list[Event] = field(default_factory=list)
    device_us: float = 0.0
    tc_us: float = 0.0

    @property
    def host_us(self) -> float:
        return self.event.end - self.event.ts if self.event is not None else 0.0

    def kernels(self) -> list[Event]:
        return [g for g in self.gpu_ops if g.type == T.KERNEL]


@dataclass(slots=True, eq=False)
class Node:
    """A host range of the tree (operator, python, module, step, some annotations, or the root)."""

    type: T | None  # None for the root
    name: str
    ts: float
    end: float
    event: Event | None = None
    children: list[Node] = field(default_factory=list)
    runtimes: list[Runtime] = field(default_factory=list)
    host_self_us: float = 0.0
    device_us: float = 0.0
    device_self_us: float = 0.0
    tc_self_us: float = 0.0
    tc_total_us: float = 0.0
    tc_eligible: bool = False
    memory: list[Any] = field(default_factory=list)

    @property
    def is_operator(self) -> bool:
        """An operator in the plugin's tables (``node.is_operator_node``)."""
        return (
            self.type == T.OPERATOR
            and not is_dataloader(self.name)
            and not self.name.startswith("Optimizer.")
            and self.name not in _EXCLUDED
        )


def _is_node(ev: Event) -> bool:
    if ev.type in (T.OPERATOR, T.PYTHON, T.MODULE, T.STEP):
        return True
    if ev.type == T.ANNOTATION:
        return ev.name in COLLECTIVES or is_dataloader(ev.name) or ev.name.startswith("Optimizer.step")
    return False


@dataclass
class Forest:
    roots: dict[Any, Node]
    """Thread trees in order of each thread's first node."""
    runtimes: list[Runtime]
    """Every runtime, in event order."""
    gpu_ops: list[Event]
    """Every GPU op, in event order."""
    collective_ext_ids: set[Any]
    nodes: list[Node]
    """Every node of every tree, children before parent in time order, trees in order (the
    plugin's ``get_operator_and_kernels``)."""


def build(trace: TbTrace) -> Forest:
    by_corr: dict[Any, Runtime] = {}
    waiting: dict[Any, list[Event]] = defaultdict(list)
    by_ext: dict[Any, list[Runtime]] = defaultdict(list)
    zero_rt: dict[Any, list[Runtime]] = defaultdict(list)
    nodes_by_tid: dict[Any, list[Node]] = {}
    runtimes: list[Runtime] = []
    gpu_ops: list[Event] = []
    collective_ext: set[Any] = set()
    for ev in trace.events:
        if ev.type in GPU_TYPES:
            gpu_ops.append(ev)
            rt = by_corr.get(ev.correlation)
            if rt is not None:
                rt.gpu_ops.append(ev)
            else:
                waiting[ev.correlation].append(ev)
        elif ev.type == T.RUNTIME:
            rt = Runtime(ev, waiting.pop(ev.correlation, []))
            by_corr[ev.correlation] = rt
            by_ext[ev.ext].append(rt)
            if ev.ext == 0:
                zero_rt[ev.tid].append(rt)
            runtimes.append(rt)
        elif _is_node(ev):
            if ev.name in COLLECTIVES:
                collective_ext.add(ev.ext)
            node = Node(T(ev.type), ev.name, ev.ts, ev.end, ev, tc_eligible=ev.name in TC_OPERATORS)
            nodes_by_tid.setdefault(ev.tid, []).append(node)
    for nodes in nodes_by_tid.values():
        for node in nodes:
            assert node.event is not None
            got = by_ext.pop(node.event.ext, None)
            if got:
                node.runtimes.extend(got)
    staled = [g for ops in waiting.values() for g in ops if g.type == T.KERNEL]
    roots: dict[Any, Node] = {}
    for tid, nodes in nodes_by_tid.items():
        has_step = any(n.type == T.STEP for n in nodes)
        extra = [Runtime(None, staled)] if staled and has_step else []
        roots[tid] = _tree(tid, nodes, zero_rt.get(tid, []) + extra)
    nodes = [n for root in roots.values() for n in post_order(root)]
    return Forest(roots, runtimes, gpu_ops, collective_ext, nodes)


def _tree(tid: Any, nodes: list[Node], root_runtimes: list[Runtime]) -> Node:
    root = Node(None, ROOT_NAME, float("-inf"), float("inf"), runtimes=list(root_runtimes))
    stack = [root]
    for node in sorted(nodes, key=lambda n: (n.ts, -n.end)):
        while True:
            top = stack[-1]
            if node.ts < top.end:
                if node.end <= top.end:
                    top.children.append(node)
                    stack.append(node)
                break  # a node that ends after the open one is dropped
            stack.pop()
    _merge_same_name_children(root)
    _fill_stats(root)
    return root


def _merge_same_name_children(root: Node) -> None:
    todo = [root]
    while todo:
        node = todo.pop()
        while (
            len(node.children) == 1
            and node.type == T.OPERATOR
            and node.children[0].type == T.OPERATOR
            and node.children[0].name == node.name
        ):
            child = node.children[0]
            node.children = child.children
            node.runtimes = child.runtimes
        todo.extend(node.children)


def _fill_stats(root: Node) -> None:
    """Bottom-up, without recursion (traces nest deeply)."""
    order: list[Node] = []
    todo = [root]
    while todo:
        node = todo.pop()
        order.append(node)
        todo.extend(node.children)
    for node in reversed(order):
        for rt in node.runtimes:
            # Accumulates on every visit, as the plugin's RuntimeNode.fill_stats does (a runtime
            # on two nodes, the dummy of staled kernels on several roots).
            for g in rt.gpu_ops:
                d = g.end - g.ts
                rt.device_us += d
                if TC_KERNEL(g.name):
                    rt.tc_us += d
        host_self = node.end - node.ts if node.event is not None else 0.0
        operator = node.type == T.OPERATOR
        for child in node.children:
            node.device_us += child.device_us
            host_self -= child.end - child.ts
            node.tc_total_us += child.tc_total_us
            if operator and child.tc_eligible:
                node.tc_eligible = True
        for rt in node.runtimes:
            host_self -= rt.host_us
            node.device_us += rt.device_us
            node.device_self_us += rt.device_us
            node.tc_self_us += rt.tc_us
            node.tc_total_us += rt.tc_us
            if operator and rt.tc_us > 0:
                node.tc_eligible = True
        node.host_self_us = host_self


def post_order(root: Node) -> list[Node]:
    """Children before parent, in time order (the plugin's ``get_operator_and_kernels``)."""
    out: list[Node] = []
    stack: list[tuple[Node, int]] = [(root, 0)]
    while stack:
        node, i = stack.pop()
        if i < len(node.children):
            stack.append((node, i + 1))
            stack.append((node.children[i], 0))
        else:
            out.append(node)
    return out


__all__ = ["ROOT_NAME", "Forest", "Node", "Runtime", "build", "post_order"]
