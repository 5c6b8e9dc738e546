"""The plugin's call trees: one per thread, runtimes hung on operators, GPU ops on runtimes, as arrays.

What (``../shared/oracle/README.md``, "How the plugin reads a trace", 2-4):

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

How, without an object per event:

1. Launches: runtimes and GPU ops sorted together by (correlation, event order); within a
   correlation, a running maximum of runtime positions gives each GPU op the runtime before it, a
   reversed running minimum the one after.
2. Runtimes to nodes: the first node per External id is ``np.unique``'s first index over the nodes
   in (thread, event) order.
3. Nesting is one loop over the nodes in (thread, ts, -end) order with a stack of ends: the one
   step that is sequential by nature; it writes each node's parent and depth and the post-order
   (a node is done when it is popped). Absorption is decided on that tree (a node is absorbed when
   its parent is an operator of its name with one child), chains resolved by pointer jumping.
4. The figures: per holding (node, runtime), in the plugin's visiting order (the post-order, trees
   in thread order), with the plugin's quirk that a runtime's device time *accumulates* on each
   visit (a runtime held twice counts 1x, then 2x); then sums up the tree one depth level at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from profilerhub_analysis import scratch
from profilerhub_analysis.tbviews.parse import COLLECTIVES, GPU_TYPES, T, TbTrace, is_dataloader
from profilerhub_analysis.tbviews.tensor_cores import TC_KERNEL, TC_KERNEL_CURRENT, TC_OPERATORS

_EXCLUDED = frozenset({"DataParallel.forward", "DistributedDataParallel.forward"})
ROOT_NAME = "CallTreeRoot"
ROOT = 0
"""The ``type`` of a thread's root node."""


@dataclass(frozen=True)
class NameFlags:
    """What the plugin decides from a name alone, per name code."""

    collective: np.ndarray
    dataloader: np.ndarray
    operator: np.ndarray
    """An operator of that name is one of the plugin's (``node.is_operator_node``)."""
    tc_operator: np.ndarray
    tc_kernel: np.ndarray
    tc_kernel_current: np.ndarray
    """By the plugin's names and those of the GPUs since (``tensor_cores.TC_KERNEL_CURRENT``)."""
    annotation_node: np.ndarray

    @classmethod
    def of(cls, names: list[str]) -> NameFlags:
        def flag(test: Any) -> np.ndarray:
            return np.fromiter((bool(test(n)) for n in names), dtype=bool, count=len(names))

        loader = flag(is_dataloader)
        collective = flag(lambda n: n in COLLECTIVES)
        return cls(
            collective=collective,
            dataloader=loader,
            operator=~loader & flag(lambda n: not n.startswith("Optimizer.") and n not in _EXCLUDED),
            tc_operator=flag(lambda n: n in TC_OPERATORS),
            tc_kernel=flag(TC_KERNEL),
            tc_kernel_current=flag(TC_KERNEL_CURRENT),
            annotation_node=collective | loader | flag(lambda n: n.startswith("Optimizer.step")),
        )


@dataclass(frozen=True)
class NodeView:
    """One node as an object (``Forest.nodes``: for tests and small traces, never on a hot path)."""

    name: str
    type: int
    ts: float
    end: float
    is_operator: bool
    host_self_us: float
    device_us: float
    device_self_us: float
    tc_self_us: float
    tc_total_us: float
    tc_eligible: bool


@dataclass
class Forest:
    """The trees as arrays over node ids: ``0..n_events_nodes-1`` are events (``event``: their
    index in the trace), then one root per thread (``roots``, in thread order).

    ``thread`` is each node's thread (its rank in ``roots``); ``preorder`` the event nodes of the
    trees in (thread, ts, -end) order, which is each tree's pre-order.
    ``parent`` is the parent after absorption (-1 for a root, -2 for a node in no tree: dropped or
    absorbed); ``order`` the plugin's node order (children before parent in time order, each tree's
    root last, trees in thread order); ``children``/``child_ptr`` the children of node ``i`` in time
    order (``children[child_ptr[i]:child_ptr[i + 1]]``). Runtimes: ``rt_event`` (event order, the
    dummy of staled kernels is runtime ``len(rt_event)``), ``gpu_event`` every GPU op and
    ``rt_of_gpu`` its runtime (-1: none; staled kernels: the dummy). Holdings ``hold_node``/
    ``hold_rt`` (in the plugin's order) say which node holds which runtime.
    """

    trace: TbTrace
    flags: NameFlags
    event: np.ndarray
    type: np.ndarray
    name: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    thread: np.ndarray
    order: np.ndarray
    preorder: np.ndarray
    roots: np.ndarray
    root_tids: np.ndarray
    children: np.ndarray
    child_ptr: np.ndarray
    rt_event: np.ndarray
    gpu_event: np.ndarray
    rt_of_gpu: np.ndarray
    hold_node: np.ndarray
    hold_rt: np.ndarray
    collective_ext: np.ndarray
    is_operator: np.ndarray
    host_self: np.ndarray
    device_total: np.ndarray
    device_self: np.ndarray
    tc_self: np.ndarray
    tc_total: np.ndarray
    tc_eligible: np.ndarray

    @property
    def operators(self) -> np.ndarray:
        """The plugin's operators, in ``order``."""
        return self.order[self.is_operator[self.order]]

    def held_kernels(self) -> tuple[np.ndarray, np.ndarray]:
        """(holding, kernel's position in ``gpu_event``) for every kernel of every holding, in the
        plugin's order (holdings in order, each runtime's kernels in event order)."""
        gpu_ptr, gpu_idx = self._rt_kernels
        counts = gpu_ptr[self.hold_rt + 1] - gpu_ptr[self.hold_rt]
        holding = np.repeat(np.arange(len(self.hold_rt)), counts)
        starts = np.repeat(gpu_ptr[self.hold_rt] - np.cumsum(counts) + counts, counts)
        return holding, gpu_idx[starts + np.arange(len(holding))]

    @cached_property
    def _rt_kernels(self) -> tuple[np.ndarray, np.ndarray]:
        t = self.trace.types[self.gpu_event]
        k = np.flatnonzero((t == T.KERNEL) & (self.rt_of_gpu >= 0))
        k = k[np.argsort(self.rt_of_gpu[k], kind="stable")]
        counts = np.bincount(self.rt_of_gpu[k], minlength=len(self.rt_event) + 1)
        return np.concatenate(([0], np.cumsum(counts))), k

    @property
    def nodes(self) -> list[NodeView]:
        names = self.trace.names
        return [
            NodeView(names[self.name[i]], int(self.type[i]), float(self.ts[i]), float(self.end[i]),
                     bool(self.is_operator[i]), float(self.host_self[i]), float(self.device_total[i]),
                     float(self.device_self[i]), float(self.tc_self[i]), float(self.tc_total[i]),
                     bool(self.tc_eligible[i]))
            for i in self.order.tolist()
        ]  # fmt: skip


def _launches(corr: np.ndarray, rt_event: np.ndarray, gpu_event: np.ndarray) -> np.ndarray:
    """Each GPU op's runtime (index into ``rt_event``): the last one before it with its
    correlation, else the first after it, else -1."""
    n_rt = len(rt_event)
    both = np.concatenate((rt_event, gpu_event))
    key = corr[both]
    order = np.lexsort((both, key))
    del both
    k = key[order]
    del key
    m = len(order)
    pos = np.arange(m)
    new = np.ones(m, dtype=bool)
    new[1:] = k[1:] != k[:-1]
    del k
    group_start = np.maximum.accumulate(np.where(new, pos, 0))
    last = np.ones(m, dtype=bool)
    last[:-1] = new[1:]
    del new
    group_end = np.minimum.accumulate(np.where(last, pos, m)[::-1])[::-1]
    del last
    is_rt = order < n_rt
    prev = np.maximum.accumulate(np.where(is_rt, pos, -1))
    nxt = np.minimum.accumulate(np.where(is_rt, pos, m)[::-1])[::-1]
    del pos
    chosen = np.where(prev >= group_start, prev, np.where(nxt <= group_end, nxt, -1))
    del prev, nxt, group_start, group_end
    gpu_at = np.flatnonzero(~is_rt)
    out = np.full(len(gpu_event), -1, dtype=np.int64)
    got = chosen[gpu_at]
    ok = got >= 0
    out[order[gpu_at[ok]] - n_rt] = order[got[ok]]
    return out


def _chunks(n: int) -> Iterator[tuple[int, int]]:
    """``[start, stop)`` of each ``scratch.CHUNK`` rows of ``n``."""
    for a in range(0, n, scratch.CHUNK):
        yield a, min(n, a + scratch.CHUNK)


def _node_column(column: np.ndarray, rows: np.ndarray, tail: int, fill: Any) -> np.ndarray:
    """``column[rows]`` then ``tail`` times ``fill`` (the roots), gathered a chunk at a time."""
    n = len(rows)
    out = scratch.empty(n + tail, column.dtype)
    for a, b in _chunks(n):
        np.take(column, rows[a:b], out=out[a:b])
    out[n:] = fill
    return out


def _with_roots(column: np.ndarray, tail: np.ndarray, dtype: Any) -> np.ndarray:
    """``column`` (over the event nodes) then ``tail`` (over the roots), as ``dtype``, a chunk at a time."""
    n = len(column)
    out = scratch.empty(n + len(tail), dtype)
    for a, b in _chunks(n):
        out[a:b] = column[a:b]
    out[n:] = tail
    return out


def _each(n: int, dtype: Any, value: Callable[[int, int], Any]) -> np.ndarray:
    """An array of ``n`` rows, ``value(start, stop)`` a chunk at a time (file-backed when large)."""
    out = scratch.empty(n, dtype)
    for a, b in _chunks(n):
        out[a:b] = value(a, b)
    return out


def _nest_order(by_thread: np.ndarray, ts: np.ndarray, end: np.ndarray, thread: np.ndarray) -> np.ndarray:
    """The nodes in (thread, ts, -end, event) order, from ``by_thread`` (thread, event) order.

    Events come in ts order, so ``by_thread`` is in (thread, ts) order already: only a run of equal
    (thread, ts) needs sorting, by (-end, event). So each chunk is sorted alone, its end moved past
    the run it would cut."""
    n = len(by_thread)
    out = scratch.empty(n, np.int32)
    a = 0
    while a < n:
        b = min(n, a + scratch.CHUNK)
        while b < n:  # move b past the run of (thread, ts) that b - 1 is in
            look = by_thread[b - 1 : b - 1 + scratch.CHUNK]
            same = (thread[look[1:]] == thread[look[0]]) & (ts[look[1:]] == ts[look[0]])
            if same.all():
                b += len(same)
                continue
            b += int(np.argmin(same))
            break
        nodes = by_thread[a:b]
        out[a:b] = nodes[np.lexsort((nodes, -end[nodes], ts[nodes], thread[nodes]))]
        a = b
    return out


def build(trace: TbTrace) -> Forest:  # noqa: C901, PLR0915 - the four steps above, in order
    """The trees of ``trace``. Every array as long as the nodes is built a chunk at a time into a
    ``scratch`` array (file-backed when large), so what anonymous memory the build holds beyond its
    inputs is a few chunks and the arrays over runtimes and GPU ops, not the host ops'."""
    t = trace.types
    flags = NameFlags.of(trace.names)
    names = trace.names
    if ROOT_NAME in names:
        root_name = names.index(ROOT_NAME)
    else:
        root_name = len(names)
        names.append(ROOT_NAME)
        flags = NameFlags.of(names)
    n_events = len(t)

    # 1. launches
    rt_event = scratch.select(n_events, lambda a, b: t[a:b] == T.RUNTIME)
    gpu_event = scratch.select(n_events, lambda a, b: np.isin(t[a:b], GPU_TYPES))
    rt_of_gpu = scratch.spill(_launches(trace.corr, rt_event, gpu_event))
    n_rt = len(rt_event)
    staled = (rt_of_gpu < 0) & (t[gpu_event] == T.KERNEL)
    rt_of_gpu[staled] = n_rt  # the dummy

    # 2. nodes, threads, runtimes on nodes
    def node_mask(a: int, b: int) -> np.ndarray:
        kind = t[a:b]
        mask = np.isin(kind, (T.OPERATOR, T.PYTHON, T.MODULE, T.STEP))
        mask |= (kind == T.ANNOTATION) & flags.annotation_node[trace.name[a:b]]
        return mask

    node_event = scratch.select(n_events, node_mask, np.int32)
    n = len(node_event)
    tid = scratch.take(trace.tid, node_event)
    first = np.full(len(trace.tids) + 1, n, dtype=np.int64)  # each tid's first node
    for a, b in _chunks(n):
        seen, at = np.unique(tid[a:b], return_index=True)
        first[seen] = np.minimum(first[seen], at + a)
    uniq = np.flatnonzero(first < n)
    root_tids = uniq[np.argsort(first[uniq], kind="stable")]
    rank_of_tid = np.full(len(trace.tids) + 1, -1, dtype=np.int32)
    rank_of_tid[root_tids] = np.arange(len(root_tids))
    thread = scratch.take(rank_of_tid, tid)
    del tid
    n_threads = len(root_tids)
    total = n + n_threads
    roots = np.arange(n, total)
    types = _node_column(t, node_event, n_threads, ROOT)
    name = _node_column(trace.name, node_event, n_threads, root_name)
    ts = _node_column(trace.ts, node_event, n_threads, -np.inf)
    end = _node_column(trace.end, node_event, n_threads, np.inf)
    ext = scratch.take(trace.ext, node_event)
    collective = [np.unique(ext[a:b][flags.collective[name[a:b]]]) for a, b in _chunks(n)]
    collective_ext = np.unique(np.concatenate(collective)) if collective else np.empty(0, ext.dtype)
    # the nodes in (thread, event) order; the first node per External id in that order
    by_thread = scratch.group(thread, n_threads)[0] if n_threads > 1 else _each(n, np.int32, np.arange)
    node_of_ext = np.full(len(trace.ids) + 1, -1, dtype=np.int64)
    for a, b in _chunks(n):
        nodes = by_thread[a:b]
        codes, at = np.unique(ext[nodes], return_index=True)
        fresh = node_of_ext[codes] < 0
        node_of_ext[codes[fresh]] = nodes[at[fresh]]
    del ext
    rt_node = node_of_ext[trace.ext[rt_event]]
    del node_of_ext

    # 3. nesting
    nest = _nest_order(by_thread, ts, end, thread)
    del by_thread
    parent, depth, post = _nest(nest, ts, end, thread, n)
    # kept: in a tree (parent -2: dropped); absorbed: an operator, the only child of its same-name parent
    count = scratch.full(total, 0, np.int32)  # each node's kept children
    for a, b in _chunks(n):
        up = parent[a:b]
        np.add.at(count, up[up >= 0], 1)

    def absorbed_of(a: int, b: int) -> np.ndarray:
        up = parent[a:b]
        safe = np.where(up >= 0, up, 0)
        return (
            (up >= 0) & (safe < n) & (count[safe] == 1) & (types[a:b] == T.OPERATOR)
            & (types[safe] == T.OPERATOR) & (name[a:b] == name[safe])
        )  # fmt: skip

    absorbed = scratch.full(total, False, bool)
    for a, b in _chunks(n):
        absorbed[a:b] = absorbed_of(a, b)
    has_absorbed_child = scratch.full(total, False, bool)
    top = _each(total, np.int32, np.arange)  # each node's node after absorption
    for a, b in _chunks(n):
        mine = absorbed[a:b]
        has_absorbed_child[parent[a:b][mine]] = True
        top[a:b][mine] = parent[a:b][mine]
    moved = True
    while moved:  # pointer jumping, in place: each pass halves every chain left
        moved = False
        for a, b in _chunks(total):
            up = top[top[a:b]]
            moved = moved or not np.array_equal(up, top[a:b])
            top[a:b] = up
    in_tree = _each(total, bool, lambda a, b: (parent[a:b] != -2) & ~absorbed[a:b])
    in_tree[n:] = True
    ev_in = scratch.select(n, lambda a, b: in_tree[a:b], np.int32)
    mparent = scratch.full(total, -1, np.int32)
    mparent[:n] = _each(n, np.int32, lambda a, b: np.where(in_tree[a:b], top[np.maximum(parent[a:b], 0)], -2))
    at = scratch.select(len(post), lambda a, b: in_tree[post[a:b]], np.int32)
    order = _each(len(at), np.int32, lambda a, b: post[at[a:b]])
    pos = scratch.empty(total, np.int32)
    for a, b in _chunks(len(order)):
        pos[order[a:b]] = np.arange(a, b)

    # runtimes' holders
    ok = np.zeros(n_rt, dtype=bool)
    on = np.flatnonzero(rt_node >= 0)
    ok[on] = (parent[rt_node[on]] != -2) & ~has_absorbed_child[rt_node[on]]
    del on, has_absorbed_child
    held_rt = np.flatnonzero(ok)
    hold_node = [top[rt_node[held_rt]].astype(np.int64)]
    hold_rt = [held_rt]
    zero = np.fromiter((_is_zero(v) for v in trace.ids), dtype=bool, count=len(trace.ids))
    rank_of_rt = rank_of_tid[trace.tid[rt_event]]
    zero_rt = np.flatnonzero(zero[trace.ext[rt_event]] & (rank_of_rt >= 0))
    hold_node.append(roots[rank_of_rt[zero_rt]])
    hold_rt.append(zero_rt)
    if staled.any():
        steps = [np.unique(thread[a:b][types[a:b] == T.STEP]) for a, b in _chunks(n)]
        step_threads = np.unique(np.concatenate(steps)) if steps else np.empty(0, np.int32)
        hold_node.append(roots[step_threads])
        hold_rt.append(np.full(len(step_threads), n_rt))
    h_node, h_rt = np.concatenate(hold_node), np.concatenate(hold_rt)
    del hold_node, hold_rt, rt_node
    by_visit = np.lexsort((h_rt, pos[h_node]))
    h_node, h_rt = scratch.spill(h_node[by_visit]), scratch.spill(h_rt[by_visit])
    del by_visit, pos
    by_rt = np.argsort(h_rt, kind="stable")
    rts = h_rt[by_rt]
    starts = np.flatnonzero(np.r_[True, rts[1:] != rts[:-1]]) if len(rts) else np.empty(0, np.int64)
    visit = np.empty(len(h_rt))
    visit[by_rt] = np.arange(len(rts)) - np.repeat(starts, np.diff(np.r_[starts, len(rts)])) + 1
    del by_rt, rts, starts

    # 4. figures
    gd = trace.end[gpu_event] - trace.ts[gpu_event]
    has_rt = rt_of_gpu >= 0
    rt_dev = np.bincount(rt_of_gpu[has_rt], weights=gd[has_rt], minlength=n_rt + 1)
    tc = flags.tc_kernel[trace.name[gpu_event]]
    rt_tc = np.bincount(rt_of_gpu[has_rt & tc], weights=gd[has_rt & tc], minlength=n_rt + 1)
    del gd, has_rt, tc
    rt_host = np.append(trace.end[rt_event] - trace.ts[rt_event], 0.0)

    def summed(at: np.ndarray, weights: np.ndarray) -> np.ndarray:  # np.bincount(minlength=total)
        out = scratch.full(total, 0.0, np.float64)
        for a, b in _chunks(len(at)):
            np.add.at(out, at[a:b], weights[a:b])
        return out

    device_self = summed(h_node, visit * rt_dev[h_rt])
    tc_self = summed(h_node, visit * rt_tc[h_rt])
    dur = _each(total, np.float64, lambda a, b: np.where(np.arange(a, b) < n, end[a:b] - ts[a:b], 0.0))
    rt_sum = summed(h_node, rt_host[h_rt])
    child_sum = scratch.full(total, 0.0, np.float64)
    for a, b in _chunks(len(ev_in)):
        nodes = ev_in[a:b]
        np.add.at(child_sum, mparent[nodes], dur[nodes])
    host_self = _each(total, np.float64, lambda a, b: dur[a:b] - rt_sum[a:b] - child_sum[a:b])
    del visit
    operator = _each(total, bool, lambda a, b: types[a:b] == T.OPERATOR)
    eligible = _each(total, bool, lambda a, b: flags.tc_operator[name[a:b]])
    launched_tc = h_node[rt_tc[h_rt] > 0]
    eligible[launched_tc] |= operator[launched_tc]
    del launched_tc
    device_total = _each(total, np.float64, lambda a, b: device_self[a:b])
    tc_total = _each(total, np.float64, lambda a, b: tc_self[a:b])
    max_depth = int(max((int(depth[a:b].max()) for a, b in _chunks(total)), default=0))
    level = _each(len(ev_in), np.int32, lambda a, b: max_depth - depth[ev_in[a:b]])
    by_depth, depth_starts = scratch.group(level, max_depth + 1, ev_in)  # deepest first
    del level
    for d in range(max_depth + 1):  # sums up the trees, one depth level at a time
        for a, b in _chunks(int(depth_starts[d + 1] - depth_starts[d])):
            xs = by_depth[depth_starts[d] + a : depth_starts[d] + b]
            ps = mparent[xs]
            np.add.at(device_total, ps, device_total[xs])
            np.add.at(tc_total, ps, tc_total[xs])
            up = ps[eligible[xs] & operator[ps]]
            eligible[up] = True
    del by_depth
    at = scratch.select(n, lambda a, b: in_tree[nest[a:b]], np.int32)
    pre = _each(len(at), np.int32, lambda a, b: nest[at[a:b]])
    kids, child_ptr = scratch.group(_each(len(pre), np.int32, lambda a, b: mparent[pre[a:b]]), total, pre)
    return Forest(
        trace=trace, flags=flags, event=_with_roots(node_event, np.full(n_threads, -1), np.int64), type=types,
        name=name,
        ts=ts, end=end, parent=mparent, depth=depth,
        thread=_with_roots(thread, np.arange(n_threads), np.int32), order=order, preorder=pre, roots=roots,
        root_tids=root_tids, children=kids, child_ptr=child_ptr, rt_event=rt_event,
        gpu_event=gpu_event, rt_of_gpu=rt_of_gpu, hold_node=h_node, hold_rt=h_rt,
        collective_ext=collective_ext,
        is_operator=_each(total, bool, lambda a, b: operator[a:b] & flags.operator[name[a:b]]),
        host_self=host_self, device_total=device_total, device_self=device_self, tc_self=tc_self,
        tc_total=tc_total, tc_eligible=eligible,
    )  # fmt: skip


def _is_zero(value: Any) -> bool:
    return type(value) in (int, float, bool) and value == 0


_NEST_CHUNK = 1 << 18
"""Nodes nested per pass of ``_nest``: its Python lists hold one chunk, not the trace."""


def _nest(
    order: np.ndarray, ts: np.ndarray, end: np.ndarray, thread: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(parent, depth, post-order) of the nodes nested per thread in ``order``; parent -2 for a
    node that starts inside the open one but ends after it (dropped), roots are ``n + thread``."""
    total = len(ts)
    parent = scratch.full(total, -2, np.int32)
    parent[n:] = -1
    depth = scratch.full(total, 0, np.int32)
    post = scratch.empty(total, np.int32)
    done = 0
    ids: list[int] = []
    ends: list[float] = []
    current = -1
    for c in range(0, len(order), _NEST_CHUNK):
        part = order[c : c + _NEST_CHUNK]
        out: list[int] = []
        parents: list[int] = []
        depths: list[int] = []
        rows = zip(part.tolist(), ts[part].tolist(), end[part].tolist(), thread[part].tolist(), strict=True)
        for i, s, e, th in rows:
            if th != current:
                out.extend(reversed(ids[1:]))
                if current >= 0:
                    out.append(n + current)
                ids, ends, current = [n + th], [np.inf], th
            while True:
                if s < ends[-1]:
                    if e <= ends[-1]:
                        parents.append(ids[-1])
                        depths.append(len(ids))
                        ids.append(i)
                        ends.append(e)
                    else:
                        parents.append(-2)
                        depths.append(0)
                    break
                out.append(ids.pop())
                ends.pop()
        post[done : done + len(out)] = out
        done += len(out)
        parent[part] = parents
        depth[part] = depths
    tail = list(reversed(ids[1:])) + ([n + current] if current >= 0 else [])
    post[done : done + len(tail)] = tail
    return parent, depth, post[: done + len(tail)]


__all__ = ["ROOT", "ROOT_NAME", "Forest", "NameFlags", "NodeView", "build"]
