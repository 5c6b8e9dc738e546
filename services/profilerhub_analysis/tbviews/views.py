"""The tables of the plugin's Overview, Operator, Kernel and Distributed views, from its trees.

Definitions: ``../shared/oracle/README.md`` ("tb_plugin views"), summarised in docs/analysis.md.
Every time is in µs as the trace wrote it; percentages are 0-100. The Memory view is ``memory.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis import scratch
from profilerhub_analysis.tbviews import ranges as rg
from profilerhub_analysis.tbviews.parse import COLLECTIVES, NO_NUMBER, NUMBER, Codes, T, TbTrace, raw_value
from profilerhub_analysis.tbviews.steps import Steps
from profilerhub_analysis.tbviews.tensor_cores import TC_OPERATORS
from profilerhub_analysis.tbviews.tree import Forest

ROLES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec")


def role_ranges(trace: TbTrace, forest: Forest) -> list[rg.Ranges]:
    """Each role's ranges in ``ROLES`` order (the plugin's ``StepParser._parse_step``), merged:
    what the overview and the distributed view read. The events are in ts order, so each role is
    merged a chunk of events at a time (``ranges.SortedMerge``)."""
    t, ts, end, name = trace.types, trace.ts, trace.end, trace.name
    dataloader, collective = forest.flags.dataloader, forest.flags.collective

    def masks(a: int, b: int) -> tuple[np.ndarray, ...]:
        kind = t[a:b]
        comm_kernel = np.isin(trace.ext[a:b], forest.collective_ext)
        loader = dataloader[name[a:b]]
        is_collective = collective[name[a:b]]
        kernel = kind == T.KERNEL
        host = (kind == T.OPERATOR) | (kind == T.ANNOTATION)
        is_loader = host & loader
        cpu = ((kind == T.PYTHON) | host) & ~is_loader
        return (
            kernel & ~comm_kernel,
            kind == T.MEMCPY,
            kind == T.MEMSET,
            (kernel & comm_kernel) | (cpu & is_collective),
            kind == T.RUNTIME,
            is_loader,
            cpu & ~is_collective,
        )

    merges = [rg.SortedMerge() for _ in ROLES]
    for a in range(0, len(ts), scratch.CHUNK):
        b = min(len(ts), a + scratch.CHUNK)
        for merge, m in zip(merges, masks(a, b), strict=True):
            merge.add(ts[a:b][m], end[a:b][m])
    return [merge.ranges() for merge in merges]


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


class _Kernels:
    """Every kernel's figures (in event order): position in ``forest.gpu_event``, duration, device
    (``None`` unless an int), and the numbers the plugin averages."""

    def __init__(self, trace: TbTrace, forest: Forest) -> None:
        gpu = forest.gpu_event
        self.at = np.flatnonzero(trace.types[gpu] == T.KERNEL)
        ev = gpu[self.at]
        self.event = ev
        self.dur = trace.end[ev] - trace.ts[ev]
        self.name = trace.name[ev]
        k = trace.aux[ev]
        cols = trace.kernel
        self.device_code = cols["device"][k]
        values = trace.values
        int_code = np.fromiter((isinstance(v, int) for v in values), dtype=bool, count=len(values))
        self.has_device = int_code[self.device_code] if len(values) else np.zeros(len(ev), dtype=bool)
        self.bps, self.bps_kind = cols["bps"][k], cols["bps_kind"][k]
        self.occ, self.occ_kind = cols["occ"][k], cols["occ_kind"][k]
        self.grid, self.block = cols["grid"][k], cols["block"][k]
        self.regs, self.smem = cols["regs"][k], cols["smem"][k]
        self.tc = forest.flags.tc_kernel[self.name]
        self.tc_current = forest.flags.tc_kernel_current[self.name]
        self.row_of_gpu = np.full(len(gpu), -1, dtype=np.int64)
        self.row_of_gpu[self.at] = np.arange(len(self.at))


def _operator_kernels(forest: Forest, ks: _Kernels) -> tuple[np.ndarray, np.ndarray]:
    """(kernel row, holding node) of every kernel that a plugin's operator holds, per holding."""
    holding, gpu_pos = forest.held_kernels()
    node = forest.hold_node[holding]
    return ks.row_of_gpu[gpu_pos], node


def gpu_summary(trace: TbTrace, forest: Forest, steps: Steps | None) -> list[dict[str, Any]]:
    ks = _Kernels(trace, forest)
    if not ks.has_device.any() or steps is None:
        return []
    w0, w1 = steps.window
    span = w1 - w0
    rows_k, node = _operator_kernels(forest, ks)
    of_ops = rows_k[forest.is_operator[node]]
    of_ops = of_ops[ks.has_device[of_ops]]
    has_tc = len(of_ops) > 0
    values = trace.values
    rows = []
    device_values = {values[c] for c in np.unique(ks.device_code[ks.has_device]).tolist()}
    for device in sorted(device_values):
        codes = [c for c in np.unique(ks.device_code[ks.has_device]).tolist() if values[c] == device]
        mine = ks.has_device & np.isin(ks.device_code, codes)
        busy = rg.within(rg.merge(trace.ts[ks.event[mine]], trace.end[ks.event[mine]]), w0, w1)
        ops_here = of_ops[np.isin(ks.device_code[of_ops], codes)]
        tc_time = float(np.sum(ks.dur[ops_here] * ks.tc[ops_here]))
        all_time = float(np.sum(ks.dur[ops_here]))
        rows.append(
            {
                "device": device,
                "gpu_utilization_pct": 100.0 * busy / span if span > 0 else None,
                "sm_efficiency_pct": _sm_efficiency(trace, ks, mine, w0, w1),
                "achieved_occupancy_pct": _occupancy(trace, ks, mine, w0, w1),
                "tensor_core_kernel_pct": (100.0 * tc_time / all_time if all_time > 0 else 0.0)
                if has_tc
                else None,
                "window_start_us": w0,
                "window_end_us": w1,
            }
        )
    return rows


def _sm_efficiency(trace: TbTrace, ks: _Kernels, mine: np.ndarray, w0: float, w1: float) -> float | None:
    """∫ over W of min(Σ blocks per SM of the running kernels, 1), over |W| (kernels with a
    ``blocks per SM`` > 0; ``None`` when none runs inside W)."""
    used = mine & (ks.bps_kind == NUMBER) & (ks.bps > 0)
    if not used.any() or w1 <= w0:
        return None
    bps = ks.bps[used]
    ev = ks.event[used]
    times = np.concatenate([trace.ts[ev], trace.end[ev]])
    kinds = np.concatenate([np.zeros(len(ev)), np.ones(len(ev))])  # starts before ends at a tie
    order = np.lexsort((kinds, times))
    delta = np.concatenate([bps, -bps])[order]
    t = times[order]
    level = np.cumsum(delta)[:-1]  # the level between point i and i + 1
    lo, hi = np.maximum(t[:-1], w0), np.minimum(t[1:], w1)
    inside = (hi > lo) & (level > 0)
    if not inside.any():
        return None
    return 100.0 * float(((hi - lo)[inside] * np.minimum(level[inside], 1.0)).sum()) / (w1 - w0)


def _occupancy(trace: TbTrace, ks: _Kernels, mine: np.ndarray, w0: float, w1: float) -> float | None:
    used = mine & (ks.occ_kind != NO_NUMBER) & (ks.occ >= 0)
    ev = ks.event[used]
    inside = np.maximum(0.0, np.minimum(trace.end[ev], w1) - np.maximum(trace.ts[ev], w0))
    den = float(inside.sum())
    return float((ks.occ[used] * inside).sum()) / den if den > 0 else None


def _first_order_groups(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group of each row, first row of each group), groups numbered by first appearance; and
    the group keys' unique index."""
    _, first, inverse = np.unique(
        key, return_index=True, return_inverse=True, axis=0 if key.ndim > 1 else None
    )
    inverse = inverse.reshape(-1)
    rank = np.empty(len(first), dtype=np.int64)
    by_first = np.argsort(first, kind="stable")
    rank[by_first] = np.arange(len(first))
    return rank[inverse], first[by_first], by_first


def operators(
    forest: Forest, calls: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(by name, by name + input shape), summed over every call (``calls``: the forest's
    ``operator_calls``, when made already)."""
    from profilerhub_analysis.tbviews.calls import operator_calls, operators_between

    by_name, by_shape, _ = operators_between(operator_calls(forest) if calls is None else calls)
    return by_name, by_shape


def _column_shown(ks: _Kernels, value: np.ndarray, kind: np.ndarray, strict: bool) -> bool:
    """The plugin shows a mean column only when some kernel with a device has a usable value (T7)."""
    usable = ks.has_device & (kind != NO_NUMBER)
    return bool((usable & ((value > 0) if strict else (value >= 0))).any())


def _kernel_rows(ks: _Kernels, rows: np.ndarray, group: np.ndarray, n: int, show_bps: bool,
                 show_occ: bool) -> list[dict[str, Any]]:  # fmt: skip
    d = ks.dur[rows]
    calls = np.bincount(group, minlength=n)
    total = np.bincount(group, weights=d, minlength=n)
    most = np.full(n, -np.inf)
    least = np.full(n, np.inf)
    np.maximum.at(most, group, d)
    np.minimum.at(least, group, d)
    bps = np.where(ks.bps_kind[rows] == NUMBER, ks.bps[rows], 0.0)
    occ = np.where(ks.occ_kind[rows] == NUMBER, ks.occ[rows], 0.0)
    bps_sum = np.bincount(group, weights=bps * d, minlength=n)
    occ_sum = np.bincount(group, weights=occ * d, minlength=n)
    out = []
    for g in range(n):
        t = float(total[g])
        out.append({
            "calls": int(calls[g]),
            "total_us": t,
            "mean_us": t / int(calls[g]),
            "max_us": max(float(most[g]), 0.0),
            "min_us": float(least[g]),
            "blocks_per_sm": (float(bps_sum[g]) / t if t > 0 else 0.0) if show_bps else None,
            "occupancy_pct": (float(occ_sum[g]) / t if t > 0 else 0.0) if show_occ else None,
        })  # fmt: skip
    return out


def kernels(forest: Forest) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(by kernel name over every kernel, by kernel + launching node over the trees' kernels)."""
    trace = forest.trace
    ks = _Kernels(trace, forest)
    names, values, raws = trace.names, trace.values, trace.raws
    show_bps = _column_shown(ks, ks.bps, ks.bps_kind, strict=True)
    show_occ = _column_shown(ks, ks.occ, ks.occ_kind, strict=False)
    every = np.arange(len(ks.at))
    group, first, _ = _first_order_groups(ks.name)
    figures = _kernel_rows(ks, every, group, len(first), show_bps, show_occ)
    rows = [{"name": names[ks.name[f]], **fig, "tensor_cores": bool(ks.tc[f])}
            for f, fig in zip(first.tolist(), figures, strict=True)]  # fmt: skip
    k_rows, node = forest_kernels = _operator_kernels(forest, ks)
    del forest_kernels
    regs_key = Codes()
    regs_code = np.fromiter((regs_key.code(str(v or "0")) for v in values), dtype=np.int64, count=len(values))
    if len(k_rows):
        key = np.column_stack((ks.name[k_rows], forest.name[node], ks.grid[k_rows], ks.block[k_rows],
                               regs_code[ks.regs[k_rows]], regs_code[ks.smem[k_rows]]))  # fmt: skip
        group, first, _ = _first_order_groups(key)
        figures = _kernel_rows(ks, k_rows, group, len(first), show_bps, show_occ)
    else:
        first, figures = np.empty(0, np.int64), []
    op_rows = []
    for f, fig in zip(first.tolist(), figures, strict=True):
        k = k_rows[f]
        regs, smem = values[ks.regs[k]], values[ks.smem[k]]
        operator = names[forest.name[node[f]]]
        op_rows.append({
            "name": names[ks.name[k]],
            "operator": operator,
            "grid": raw_value(raws[ks.grid[k]]),
            "block": raw_value(raws[ks.block[k]]),
            "registers_per_thread": regs if regs is not None else 0,
            "shared_memory": smem if smem is not None else 0,
            **fig,
            "tensor_cores": bool(ks.tc[k]),
            "op_tc_eligible": operator in TC_OPERATORS,
        })  # fmt: skip
    by_total = lambda r: -r["total_us"]  # noqa: E731
    return sorted(rows, key=by_total), sorted(op_rows, key=by_total)


def facts(trace: TbTrace, forest: Forest, curve: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the plugin's recommendations read (its ``RunProfileData.analyze``): whether the model
    ran under ``DataParallel`` / ``DistributedDataParallel``, on how many devices, the first GPU's
    compute capability, the share of kernel time that used tensor cores (``tc_used_pct``, over
    every kernel, by the plugin's kernel names; ``tc_used_current_pct`` by those of the GPUs since
    too: ``tensor_cores``) and the share launched by tensor-core eligible operators (``tc_eligible_pct``,
    over the kernels of operators' launches); ``None`` where the trace has no kernel. Also the
    collective libraries used (``nccl``/``gloo``), every GPU's compute capability, and each GPU's
    peak allocated memory (``curve``: ``memory_curve``) beside its ``totalGlobalMem``."""
    tree_names = {trace.names[c] for c in np.unique(forest.name[forest.order]).tolist()}
    ks = _Kernels(trace, forest)
    total = float(ks.dur.sum())
    used = float(ks.dur[ks.tc].sum())
    used_current = float(ks.dur[ks.tc_current].sum())
    k_rows, node = _operator_kernels(forest, ks)
    of_ops = forest.is_operator[node]
    of_operators = float(ks.dur[k_rows[of_ops]].sum())
    eligible = float(ks.dur[k_rows[of_ops & forest.tc_eligible[node]]].sum())
    props = trace.device_properties
    major = props[0].get("computeMajor") if props else None
    name = props[0].get("name") if props else None
    return {
        "device_name": name if isinstance(name, str) else None,
        "data_parallel": "DataParallel.forward" in tree_names,
        "distributed_data_parallel": "DistributedDataParallel.forward" in tree_names,
        "devices": len(np.unique(trace.pid[forest.gpu_event])),
        "compute_major": major if isinstance(major, int) else None,
        "tc_used_pct": 100.0 * used / total if total > 0 else None,
        "tc_used_current_pct": 100.0 * used_current / total if total > 0 else None,
        "tc_eligible_pct": 100.0 * eligible / of_operators if of_operators > 0 else None,
        "collective_libs": sorted({n.split(":")[0] for n in tree_names if n in COLLECTIVES}),
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
    gpu = forest.gpu_event
    comm = gpu[(trace.types[gpu] == T.KERNEL) & np.isin(trace.ext[gpu], forest.collective_ext)]
    comm = comm[np.argsort(trace.ext[comm], kind="stable")]
    comm_ext = trace.ext[comm]
    ops: dict[str, dict[str, Any]] = {}
    host = np.isin(trace.types, (T.OPERATOR, T.PYTHON, T.ANNOTATION)) & forest.flags.collective[trace.name]
    for i in np.flatnonzero(host).tolist():
        name = trace.names[trace.name[i]]
        row = ops.setdefault(name, {"name": name, "calls": 0, "bytes": 0, "_ranges": []})
        row["calls"] += 1
        row["bytes"] += _collective_bytes(trace, int(trace.aux[i]))
        e = trace.ext[i]
        lo, hi = np.searchsorted(comm_ext, e, "left"), np.searchsorted(comm_ext, e, "right")
        row["_ranges"].append((trace.ts[i : i + 1], trace.end[i : i + 1]))
        row["_ranges"].append((trace.ts[comm[lo:hi]], trace.end[comm[lo:hi]]))
    collectives = []
    for row in ops.values():
        spans = row.pop("_ranges")
        starts = np.concatenate([a for a, _ in spans])
        ends = np.concatenate([b for _, b in spans])
        collectives.append({**row, "total_us": rg.total(rg.merge(starts, ends))})
    return {
        "steps": rows,
        "average": average,
        "collectives": sorted(collectives, key=lambda r: -r["total_us"]),
    }


def _collective_bytes(trace: TbTrace, row: int) -> int:
    it = int(trace.attrs["input_type"][row])
    shapes = raw_value(trace.raws[trace.attrs["dims"][row]])
    types = trace.input_types[it] if it >= 0 else None
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
