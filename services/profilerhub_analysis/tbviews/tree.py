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

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from profilerhub_analysis.tbviews.parse import COLLECTIVES, GPU_TYPES, T, TbTrace, is_dataloader
from profilerhub_analysis.tbviews.tensor_cores import TC_KERNEL, TC_OPERATORS

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
    k = key[order]
    m = len(order)
    pos = np.arange(m)
    new = np.ones(m, dtype=bool)
    new[1:] = k[1:] != k[:-1]
    group_start = np.maximum.accumulate(np.where(new, pos, 0))
    last = np.ones(m, dtype=bool)
    last[:-1] = new[1:]
    group_end = np.minimum.accumulate(np.where(last, pos, m)[::-1])[::-1]
    is_rt = order < n_rt
    prev = np.maximum.accumulate(np.where(is_rt, pos, -1))
    nxt = np.minimum.accumulate(np.where(is_rt, pos, m)[::-1])[::-1]
    chosen = np.where(prev >= group_start, prev, np.where(nxt <= group_end, nxt, -1))
    gpu_at = np.flatnonzero(~is_rt)
    out = np.full(len(gpu_event), -1, dtype=np.int64)
    got = chosen[gpu_at]
    ok = got >= 0
    out[order[gpu_at[ok]] - n_rt] = order[got[ok]]
    return out


def build(trace: TbTrace) -> Forest:  # noqa: PLR0915 - the four steps above, in order
    t = trace.types
    flags = NameFlags.of(trace.names)
    names = trace.names
    if ROOT_NAME in names:
        root_name = names.index(ROOT_NAME)
    else:
        root_name = len(names)
        names.append(ROOT_NAME)
        flags = NameFlags.of(names)

    # 1. launches
    rt_event = np.flatnonzero(t == T.RUNTIME)
    gpu_event = np.flatnonzero(np.isin(t, GPU_TYPES))
    rt_of_gpu = _launches(trace.corr, rt_event, gpu_event)
    n_rt = len(rt_event)
    staled = (rt_of_gpu < 0) & (t[gpu_event] == T.KERNEL)
    rt_of_gpu[staled] = n_rt  # the dummy

    # 2. nodes, threads, runtimes on nodes
    is_node = np.isin(t, (T.OPERATOR, T.PYTHON, T.MODULE, T.STEP))
    is_node |= (t == T.ANNOTATION) & flags.annotation_node[trace.name]
    node_event = np.flatnonzero(is_node).astype(np.int32)
    n = len(node_event)
    tid = trace.tid[node_event]
    uniq, first = np.unique(tid, return_index=True)
    by_first = np.argsort(first, kind="stable")
    root_tids = uniq[by_first]
    rank_of_tid = np.full(len(trace.tids) + 1, -1, dtype=np.int64)
    rank_of_tid[root_tids] = np.arange(len(root_tids))
    thread = rank_of_tid[tid].astype(np.int32)
    n_threads = len(root_tids)
    total = n + n_threads
    roots = np.arange(n, total)
    ext = trace.ext[node_event]
    collective_ext = np.unique(ext[flags.collective[trace.name[node_event]]])
    attach_order = np.lexsort((node_event, thread))
    ext_codes, first_node = np.unique(ext[attach_order], return_index=True)
    node_of_ext = np.full(len(trace.ids) + 1, -1, dtype=np.int64)
    node_of_ext[ext_codes] = attach_order[first_node]
    rt_node = node_of_ext[trace.ext[rt_event]]

    # 3. nesting
    types = np.concatenate((t[node_event], np.full(n_threads, ROOT, dtype=np.int8)))
    name = np.concatenate((trace.name[node_event], np.full(n_threads, root_name, dtype=np.int32)))
    ts = np.concatenate((trace.ts[node_event], np.full(n_threads, -np.inf)))
    end = np.concatenate((trace.end[node_event], np.full(n_threads, np.inf)))
    nest = np.lexsort((node_event, -end[:n], ts[:n], thread)).astype(np.int32)
    parent, depth, post = _nest(nest, ts, end, thread, n)
    kept = parent != -2
    kept[n:] = True
    safe = np.where(kept, parent, 0)
    safe[n:] = 0
    count = np.bincount(safe[:n][kept[:n]], minlength=total).astype(np.int32)
    absorbed = np.zeros(total, dtype=bool)
    absorbed[:n] = (
        kept[:n] & (safe[:n] < n) & (count[safe[:n]] == 1) & (types[:n] == T.OPERATOR)
        & (types[safe[:n]] == T.OPERATOR) & (name[:n] == name[safe[:n]])
    )  # fmt: skip
    del count
    top = np.arange(total, dtype=np.int32)
    top[absorbed] = parent[absorbed]
    while True:
        nxt = top[top]
        if np.array_equal(nxt, top):
            break
        top = nxt
    has_absorbed_child = np.zeros(total, dtype=bool)
    has_absorbed_child[parent[absorbed]] = True
    in_tree = kept & ~absorbed
    del safe
    mparent = np.full(total, -2, dtype=np.int32)
    ev_in = np.flatnonzero(in_tree[:n])
    mparent[ev_in] = top[parent[ev_in]]
    mparent[n:] = -1
    order = post[in_tree[post]]
    del post
    pos = np.empty(total, dtype=np.int32)
    pos[order] = np.arange(len(order))

    # runtimes' holders
    on = np.where(rt_node >= 0, rt_node, total)  # total: no node (the padding's False)
    ok = np.append(kept, False)[on] & ~np.append(has_absorbed_child, True)[on]
    held_rt = np.flatnonzero(ok)
    hold_node = [top[rt_node[held_rt]]]
    hold_rt = [held_rt]
    zero = np.fromiter((_is_zero(v) for v in trace.ids), dtype=bool, count=len(trace.ids))
    zero_rt = np.flatnonzero(zero[trace.ext[rt_event]] & (rank_of_tid[trace.tid[rt_event]] >= 0))
    hold_node.append(roots[rank_of_tid[trace.tid[rt_event[zero_rt]]]])
    hold_rt.append(zero_rt)
    if staled.any():
        step_threads = np.unique(thread[types[:n] == T.STEP])
        hold_node.append(roots[step_threads])
        hold_rt.append(np.full(len(step_threads), n_rt))
    h_node, h_rt = np.concatenate(hold_node), np.concatenate(hold_rt)
    by_visit = np.lexsort((h_rt, pos[h_node]))
    h_node, h_rt = h_node[by_visit], h_rt[by_visit]
    by_rt = np.argsort(h_rt, kind="stable")
    rts = h_rt[by_rt]
    starts = np.flatnonzero(np.r_[True, rts[1:] != rts[:-1]]) if len(rts) else np.empty(0, np.int64)
    visit = np.empty(len(h_rt))
    visit[by_rt] = np.arange(len(rts)) - np.repeat(starts, np.diff(np.r_[starts, len(rts)])) + 1

    # 4. figures
    gd = trace.end[gpu_event] - trace.ts[gpu_event]
    has_rt = rt_of_gpu >= 0
    rt_dev = np.bincount(rt_of_gpu[has_rt], weights=gd[has_rt], minlength=n_rt + 1)
    tc = flags.tc_kernel[trace.name[gpu_event]]
    rt_tc = np.bincount(rt_of_gpu[has_rt & tc], weights=gd[has_rt & tc], minlength=n_rt + 1)
    rt_host = np.append(trace.end[rt_event] - trace.ts[rt_event], 0.0)
    device_self = np.bincount(h_node, weights=visit * rt_dev[h_rt], minlength=total)
    tc_self = np.bincount(h_node, weights=visit * rt_tc[h_rt], minlength=total)
    dur = np.where(np.arange(total) < n, end - ts, 0.0)
    host_self = dur - np.bincount(h_node, weights=rt_host[h_rt], minlength=total)
    host_self -= np.bincount(mparent[ev_in], weights=dur[ev_in], minlength=total)
    operator = types == T.OPERATOR
    eligible = flags.tc_operator[name].copy()
    tc_launch = np.zeros(total, dtype=bool)
    tc_launch[h_node[rt_tc[h_rt] > 0]] = True
    eligible |= operator & tc_launch
    device_total, tc_total = device_self.copy(), tc_self.copy()
    by_depth = ev_in[np.argsort(-depth[ev_in], kind="stable")]
    d = depth[by_depth]
    cuts = np.flatnonzero(np.r_[True, d[1:] != d[:-1], True]) if len(d) else np.zeros(1, np.int64)
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        xs = by_depth[a:b]
        ps = mparent[xs]
        np.add.at(device_total, ps, device_total[xs])
        np.add.at(tc_total, ps, tc_total[xs])
        up = ps[eligible[xs] & operator[ps]]
        eligible[up] = True
    pre = nest[in_tree[nest]]
    del nest, dur, pos
    kids = pre[np.argsort(mparent[pre], kind="stable")]
    child_ptr = np.concatenate(([0], np.cumsum(np.bincount(mparent[pre], minlength=total))))
    return Forest(
        trace=trace, flags=flags, event=np.append(node_event, np.full(n_threads, -1)), type=types,
        name=name, ts=ts, end=end, parent=mparent, depth=depth,
        thread=np.concatenate((thread, np.arange(n_threads, dtype=np.int32))), order=order, preorder=pre,
        roots=roots,
        root_tids=root_tids, children=kids, child_ptr=child_ptr, rt_event=rt_event,
        gpu_event=gpu_event, rt_of_gpu=rt_of_gpu, hold_node=h_node, hold_rt=h_rt,
        collective_ext=collective_ext, is_operator=operator & flags.operator[name],
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
    parent = np.full(total, -2, dtype=np.int32)
    parent[n:] = -1
    depth = np.zeros(total, dtype=np.int32)
    post = np.empty(total, dtype=np.int32)
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
