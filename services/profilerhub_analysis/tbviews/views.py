"""The tables of the plugin's Overview, Operator, Kernel and Distributed views, from its trees.

Definitions: ``../shared/oracle/README.md`` ("tb_plugin views"), summarised in docs/analysis.md.
Every time is in µs as the trace wrote it; percentages are 0-100. The Memory view is ``memory.py``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from profilerhub_analysis.tbviews import ranges as rg
from profilerhub_analysis.tbviews.parse import COLLECTIVES, T, TbTrace, is_dataloader, raw_value
from profilerhub_analysis.tbviews.steps import Steps
from profilerhub_analysis.tbviews.tensor_cores import TC_KERNEL, TC_OPERATORS
from profilerhub_analysis.tbviews.tree import Forest, Node

ROLES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec")


def role_ranges(trace: TbTrace, forest: Forest) -> list[rg.Ranges]:
    """Each role's ranges in ``ROLES`` order (the plugin's ``StepParser._parse_step``), merged:
    what the overview and the distributed view read."""
    ev = trace.events
    t, ts, end = trace.types, trace.ts, trace.end
    comm_ext = forest.collective_ext_ids
    comm_kernel = np.fromiter((e.ext in comm_ext for e in ev), dtype=bool, count=len(ev))
    names = [e.name for e in ev]
    flags = {n: (is_dataloader(n), n in COLLECTIVES) for n in set(names)}
    loader = np.fromiter((flags[n][0] for n in names), dtype=bool, count=len(ev))
    collective = np.fromiter((flags[n][1] for n in names), dtype=bool, count=len(ev))
    kernel = t == T.KERNEL
    host = (t == T.OPERATOR) | (t == T.ANNOTATION)
    is_loader = host & loader
    cpu = ((t == T.PYTHON) | host) & ~is_loader
    masks = (
        kernel & ~comm_kernel,
        t == T.MEMCPY,
        t == T.MEMSET,
        (kernel & comm_kernel) | (cpu & collective),
        t == T.RUNTIME,
        is_loader,
        cpu & ~collective,
    )
    return [rg.merge(ts[m], end[m]) for m in masks]


def overview(roles: list[rg.Ranges], steps: Steps) -> dict[str, Any]:
    """Step time by role: each role takes what earlier roles left of the steps (Kernel first)."""
    costs: list[rg.Ranges] = []
    slots: rg.Ranges = rg.EMPTY
    for role in roles:
        if len(slots):
            got = rg.intersect(slots, role)
        else:  # the first role, or every step already taken (quirk T9)
            got = role
            slots = rg.of(steps.ranges)
        costs.append(got)
        slots = rg.subtract(slots, got)
    costs.append(slots)
    keys = [f"{r}_us" for r in ROLES] + ["other_us"]
    rows = []
    for name, (start, end) in zip(steps.names, steps.ranges, strict=True):
        row: dict[str, Any] = {"step": name}
        row.update({k: rg.within(c, start, end) for k, c in zip(keys, costs, strict=True)})
        row.update(total_us=end - start, start_us=start, end_us=end)
        rows.append(row)
    average = {k: sum(r[k] for r in rows) / len(rows) for k in [*keys, "total_us"]}
    return {
        "steps": rows,
        "average": average,
        "host_steps": steps.host_steps,
        "kept_steps": len(rows),
        "has_runtime": bool(len(roles[4])),
        "has_kernel": bool(len(roles[0])),
        "has_memcpy_or_memset": bool(len(roles[1]) or len(roles[2])),
        "has_communication": bool(len(roles[3])),
    }


def _operators_of(forest: Forest) -> list[Node]:
    return [n for n in forest.nodes if n.is_operator]


def _holders(forest: Forest) -> list[tuple[Node, Any]]:
    """(node holding a runtime, runtime) for every runtime in the trees, in the plugin's order."""
    return [(n, rt) for n in forest.nodes for rt in n.runtimes]


def gpu_summary(trace: TbTrace, forest: Forest, steps: Steps | None) -> list[dict[str, Any]]:
    kernels = [e for e in forest.gpu_ops if e.type == T.KERNEL and isinstance(e.args.device, int)]
    if not kernels or steps is None:
        return []
    w0, w1 = steps.window
    span = w1 - w0
    by_device: dict[int, list[Any]] = defaultdict(list)
    for k in kernels:
        by_device[k.args.device].append(k)
    tc: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for node, rt in _holders(forest):
        if node.is_operator:
            for k in rt.kernels():
                if isinstance(k.args.device, int):
                    d = k.end - k.ts
                    tc[k.args.device][0] += d * TC_KERNEL(k.name)
                    tc[k.args.device][1] += d
    rows = []
    for device in sorted(by_device):
        ks = by_device[device]
        starts = np.fromiter((k.ts for k in ks), dtype=np.float64, count=len(ks))
        ends = np.fromiter((k.end for k in ks), dtype=np.float64, count=len(ks))
        busy = rg.within(rg.merge(starts, ends), w0, w1)
        tc_time, all_time = tc.get(device, (0.0, 0.0))
        rows.append(
            {
                "device": device,
                "gpu_utilization_pct": 100.0 * busy / span if span > 0 else None,
                "sm_efficiency_pct": _sm_efficiency(ks, w0, w1),
                "achieved_occupancy_pct": _occupancy(ks, w0, w1),
                "tensor_core_kernel_pct": (100.0 * tc_time / all_time if all_time > 0 else 0.0)
                if tc
                else None,
                "window_start_us": w0,
                "window_end_us": w1,
            }
        )
    return rows


def _sm_efficiency(kernels: list[Any], w0: float, w1: float) -> float | None:
    """∫ over W of min(Σ blocks per SM of the running kernels, 1), over |W| (kernels with a
    ``blocks per SM`` > 0; ``None`` when none runs inside W)."""
    used = [k for k in kernels if type(k.args.blocks_per_sm) in (int, float) and k.args.blocks_per_sm > 0]
    if not used or w1 <= w0:
        return None
    bps = np.array([k.args.blocks_per_sm for k in used], dtype=np.float64)
    times = np.concatenate([[k.ts for k in used], [k.end for k in used]])
    kinds = np.concatenate([np.zeros(len(used)), np.ones(len(used))])  # starts before ends at a tie
    order = np.lexsort((kinds, times))
    delta = np.concatenate([bps, -bps])[order]
    t = times[order]
    level = np.cumsum(delta)[:-1]  # the level between point i and i + 1
    lo, hi = np.maximum(t[:-1], w0), np.minimum(t[1:], w1)
    inside = (hi > lo) & (level > 0)
    if not inside.any():
        return None
    return 100.0 * float(((hi - lo)[inside] * np.minimum(level[inside], 1.0)).sum()) / (w1 - w0)


def _occupancy(kernels: list[Any], w0: float, w1: float) -> float | None:
    num = den = 0.0
    for k in kernels:
        occ = k.args.occupancy
        if isinstance(occ, int | float) and occ >= 0:
            inside = max(0.0, min(k.end, w1) - max(k.ts, w0))
            num += occ * inside
            den += inside
    return num / den if den > 0 else None


def _op_row(first: Node) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(
        ("device_self_us", "device_total_us", "host_self_us", "host_total_us"), 0.0
    )
    return {"calls": 0, **row, "tc_eligible": first.tc_eligible, "_tc_self": 0.0, "_tc_total": 0.0}


def operators(forest: Forest) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(by name, by name + input shape), summed over every call."""
    by_name: dict[Any, dict[str, Any]] = {}
    by_shape: dict[Any, dict[str, Any]] = {}
    shapes: dict[bytes, Any] = {}
    for op in _operators_of(forest):
        assert op.event is not None
        raw = op.event.args.dims if len(op.event.args.dims) else op.event.args.dims_lower
        key = bytes(raw)
        if key not in shapes:
            value = raw_value(raw)
            shapes[key] = [] if value is None else value
        for table, k in ((by_name, op.name), (by_shape, (op.name, key))):
            row = table.get(k)
            if row is None:
                row = table[k] = _op_row(op)
            row["calls"] += 1
            row["device_self_us"] += op.device_self_us
            row["device_total_us"] += op.device_us
            row["host_self_us"] += op.host_self_us
            row["host_total_us"] += op.end - op.ts
            row["_tc_self"] += op.tc_self_us
            row["_tc_total"] += op.tc_total_us
    names = [{"name": n, **_finish(r)} for n, r in by_name.items()]
    shaped = [{"name": n, "input_shape": shapes[s], **_finish(r)} for (n, s), r in by_shape.items()]
    order = lambda r: -r["device_self_us"] if r["device_self_us"] else -r["host_self_us"]  # noqa: E731
    return sorted(names, key=order), sorted(shaped, key=order)


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    tc_self, tc_total = row.pop("_tc_self"), row.pop("_tc_total")
    row["tc_self_pct"] = 100.0 * tc_self / row["device_self_us"] if row["device_self_us"] > 0 else 0
    row["tc_total_pct"] = 100.0 * tc_total / row["device_total_us"] if row["device_total_us"] > 0 else 0
    return row


def _column_shown(kernels: list[Any], attr: str, floor: float, strict: bool) -> bool:
    """The plugin shows a mean column only when some kernel with a device has a usable value (T7)."""
    for k in kernels:
        v = getattr(k.args, attr)
        if (
            isinstance(k.args.device, int)
            and isinstance(v, int | float)
            and (v > floor if strict else v >= floor)
        ):
            return True
    return False


class _KernelAgg:
    __slots__ = ("calls", "max_us", "min_us", "occ", "bps", "total_us")

    def __init__(self) -> None:
        self.calls = 0
        self.total_us = self.bps = self.occ = 0.0
        self.max_us = 0.0
        self.min_us = float("inf")

    def add(self, k: Any) -> None:
        d = k.end - k.ts
        self.calls += 1
        self.total_us += d
        self.max_us = max(self.max_us, d)
        self.min_us = min(self.min_us, d)
        self.bps += float(_num(k.args.blocks_per_sm)) * d
        self.occ += float(_num(k.args.occupancy)) * d

    def row(self, show_bps: bool, show_occ: bool) -> dict[str, Any]:
        t = self.total_us
        return {
            "calls": self.calls,
            "total_us": t,
            "mean_us": t / self.calls,
            "max_us": self.max_us,
            "min_us": self.min_us,
            "blocks_per_sm": (self.bps / t if t > 0 else 0.0) if show_bps else None,
            "occupancy_pct": (self.occ / t if t > 0 else 0.0) if show_occ else None,
        }


def _num(v: Any) -> float:
    return v if isinstance(v, int | float) and not isinstance(v, bool) else 0


def kernels(forest: Forest) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(by kernel name over every kernel, by kernel + launching node over the trees' kernels)."""
    every = [e for e in forest.gpu_ops if e.type == T.KERNEL]
    show_bps = _column_shown(every, "blocks_per_sm", 0, strict=True)
    show_occ = _column_shown(every, "occupancy", 0, strict=False)
    by_name: dict[str, _KernelAgg] = {}
    for k in every:
        by_name.setdefault(k.name, _KernelAgg()).add(k)
    rows = [
        {"name": n, **a.row(show_bps, show_occ), "tensor_cores": TC_KERNEL(n)} for n, a in by_name.items()
    ]
    by_op: dict[tuple[Any, ...], tuple[_KernelAgg, dict[str, Any]]] = {}
    for node, rt in _holders(forest):
        for k in rt.kernels():
            a = k.args
            key = (
                k.name,
                node.name,
                bytes(a.grid),
                bytes(a.block),
                str(a.regs or "0"),
                str(a.shared_memory or "0"),
            )
            got = by_op.get(key)
            if got is None:
                head = {
                    "name": k.name,
                    "operator": node.name,
                    "grid": raw_value(a.grid),
                    "block": raw_value(a.block),
                    "registers_per_thread": a.regs if a.regs is not None else 0,
                    "shared_memory": a.shared_memory if a.shared_memory is not None else 0,
                }
                got = by_op[key] = (_KernelAgg(), head)
            got[0].add(k)
    op_rows = [
        {
            **head,
            **agg.row(show_bps, show_occ),
            "tensor_cores": TC_KERNEL(head["name"]),
            "op_tc_eligible": head["operator"] in TC_OPERATORS,
        }
        for agg, head in by_op.values()
    ]
    by_total = lambda r: -r["total_us"]  # noqa: E731
    return sorted(rows, key=by_total), sorted(op_rows, key=by_total)


def facts(trace: TbTrace, forest: Forest, curve: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the plugin's recommendations read (its ``RunProfileData.analyze``): whether the model
    ran under ``DataParallel`` / ``DistributedDataParallel``, on how many devices, the first GPU's
    compute capability, the share of kernel time that used tensor cores (``tc_used_pct``, over
    every kernel) and the share launched by tensor-core eligible operators (``tc_eligible_pct``,
    over the kernels of operators' launches); ``None`` where the trace has no kernel. Also the
    collective libraries used (``nccl``/``gloo``), every GPU's compute capability, and each GPU's
    peak allocated memory (``curve``: ``memory_curve``) beside its ``totalGlobalMem``."""
    names = {n.name for n in forest.nodes}
    kernels = [g for g in forest.gpu_ops if g.type == T.KERNEL]
    total = sum(k.end - k.ts for k in kernels)
    used = sum(k.end - k.ts for k in kernels if TC_KERNEL(k.name))
    eligible = of_operators = 0.0
    for node, rt in _holders(forest):
        if node.is_operator:
            d = sum(k.end - k.ts for k in rt.kernels())
            of_operators += d
            eligible += d if node.tc_eligible else 0.0
    props = trace.device_properties
    major = props[0].get("computeMajor") if props else None
    name = props[0].get("name") if props else None
    return {
        "device_name": name if isinstance(name, str) else None,
        "data_parallel": "DataParallel.forward" in names,
        "distributed_data_parallel": "DistributedDataParallel.forward" in names,
        "devices": len({g.pid for g in forest.gpu_ops}),
        "compute_major": major if isinstance(major, int) else None,
        "tc_used_pct": 100.0 * used / total if total > 0 else None,
        "tc_eligible_pct": 100.0 * eligible / of_operators if of_operators > 0 else None,
        "collective_libs": sorted({n.split(":")[0] for n in names if n in COLLECTIVES}),
        "compute_capabilities": [
            [p["computeMajor"], p["computeMinor"]] for p in props
            if isinstance(p.get("computeMajor"), int) and isinstance(p.get("computeMinor"), int)
        ],
        "gpu_memory": _gpu_memory(props, curve or []),
    }  # fmt: skip


def _gpu_memory(props: list[dict[str, Any]], curve: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per GPU with memory records: its peak allocated bytes and its ``totalGlobalMem`` (by the
    property's ``id``; the plugin indexes the list by device id, the same for Kineto's lists)."""
    total = {p.get("id", i): p.get("totalGlobalMem") for i, p in enumerate(props)}
    out = []
    for c in curve:
        if not c["device"].startswith("GPU"):
            continue
        device = int(c["device"][3:])
        mem = total.get(device)
        out.append({"device": c["device"], "peak_bytes": c["peak_allocated_bytes"],
                    "total_bytes": mem if isinstance(mem, int | float) else None})  # fmt: skip
    return out


_TYPE_BYTES = {"long int": 8, "float": 4, "int": 4, "c10::Half": 2, "c10::BFloat16": 2, "unsigned char": 1,
               "double": 8, "bool": 1}  # fmt: skip


def distributed(trace: TbTrace, forest: Forest, roles: list[rg.Ranges], steps: Steps) -> dict[str, Any]:
    """The plugin's distributed view of one worker: per step, computation (kernel time, or CPU
    time without kernels), communication, their overlap and the rest of the step; and the
    collectives (``nccl:``/``gloo:`` ops) by name: calls, bytes (input shapes x element sizes)
    and time (the union of the op's range and its kernels')."""
    compute = roles[0] if len(roles[0]) else roles[6]
    comm = roles[3]
    both = rg.intersect(compute, comm)
    rows: list[dict[str, Any]] = []
    for name, (start, end) in zip(steps.names, steps.ranges, strict=True):
        overlap = rg.within(both, start, end)
        computation = rg.within(compute, start, end)
        communication = rg.within(comm, start, end)
        rows.append(
            {
                "step": name,
                "computation_us": computation,
                "overlap_us": overlap,
                "communication_us": communication,
                "other_us": (end - start) + overlap - computation - communication,
            }
        )
    keys = ("computation_us", "overlap_us", "communication_us", "other_us")
    average = {k: sum(r[k] for r in rows) / len(rows) for k in keys} if rows else None
    kernels_of: dict[Any, list[tuple[float, float]]] = defaultdict(list)
    for g in forest.gpu_ops:
        if g.type == T.KERNEL and g.ext in forest.collective_ext_ids:
            kernels_of[g.ext].append((g.ts, g.end))
    ops: dict[str, dict[str, Any]] = {}
    for ev in trace.events:
        if ev.name not in COLLECTIVES or ev.type not in (T.OPERATOR, T.PYTHON, T.ANNOTATION):
            continue
        row = ops.setdefault(ev.name, {"name": ev.name, "calls": 0, "bytes": 0, "_ranges": []})
        row["calls"] += 1
        row["bytes"] += _collective_bytes(ev)
        row["_ranges"] += [(ev.ts, ev.end), *kernels_of.get(ev.ext, [])]
    collectives = []
    for row in ops.values():
        spans = row.pop("_ranges")
        starts = np.array([a for a, _ in spans])
        ends = np.array([b for _, b in spans])
        collectives.append({**row, "total_us": rg.total(rg.merge(starts, ends))})
    return {
        "steps": rows,
        "average": average,
        "collectives": sorted(collectives, key=lambda r: -r["total_us"]),
    }


def _collective_bytes(ev: Any) -> int:
    raw = ev.args.dims if len(ev.args.dims) else ev.args.dims_lower
    shapes, types = raw_value(raw), ev.args.input_type
    if not isinstance(shapes, list) or not isinstance(types, list):
        return 0
    total = 0
    for shape, kind in zip(shapes, types, strict=False):
        if isinstance(shape, list) and all(isinstance(n, int) for n in shape):
            size = 1
            for n in shape:
                size *= n
            total += size * _TYPE_BYTES.get(kind, 0)
    return total


__all__ = [
    "distributed",
    "facts",
    "gpu_summary",
    "role_ranges",
    "kernels",
    "operators",
    "overview",
]
