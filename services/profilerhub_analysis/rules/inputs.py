"""Building a ``RuleData`` from what a job stores: the SDK's system samples, steps and annotations
(decoded records at ingest, or the columns of ``series.npz``), and each trace's report.

GPU utilisation comes from NVML samples (``gpuN.util_percent``); a job without them but with GPU
work in a trace gets the trace's kernel-busy buckets instead (``source: "trace"``). GPU memory is
``mem_used_bytes / mem_total_bytes`` in %. Steps are the SDK's ``ph.step`` ranges, else the
trace's ``ProfilerStep#N``. Data-loading ranges are SDK annotations whose name says data loading
and the trace's ``enumerate(DataLoader)…`` events.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import RuleData, Series

DATALOADER = re.compile(
    r"enumerate\(DataLoader\)|dataloader|data[_ -]?load|next[_ -]?batch|fetch[_ -]?batch", re.IGNORECASE
)
GPU_COLUMN = re.compile(r"^gpu(\d+)\.(\w+)$")


def system_columns(samples: Sequence[Any]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(t_ns, {column: values})`` of decoded system samples, by time (``sdk_records`` columns)."""
    from profilerhub_analysis.sdk_records import _numeric_columns

    if not samples:
        return np.zeros(0, np.int64), {}
    ts = np.fromiter(map(attrgetter("ts_ns"), samples), np.int64, len(samples))
    order = np.argsort(ts, kind="stable")
    cols = {k: v[order] for k, v in _numeric_columns(samples).items() if np.isfinite(v).any()}
    return ts[order], cols


def from_columns(
    t_ns: np.ndarray,
    columns: dict[str, np.ndarray],
    *,
    steps: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    dataloader: tuple[np.ndarray, np.ndarray] | None = None,
    traces: Sequence[dict[str, Any]] = (),
    job: dict[str, Any] | None = None,
    finished: bool = True,
) -> RuleData:
    """A ``RuleData`` from system columns, step ranges ``(start_ns, dur_ns, numbers)``, data-loading
    ranges ``(start_ns, dur_ns)``, trace summary entries (``{"report": …, "dataloader": …}``) and
    the job section of the summary (``start_ns``, ``end_ns``, ``dataloader_workers``)."""
    job = job or {}
    system = {k: Series(t_ns, np.asarray(v, np.float64)) for k, v in columns.items()}
    data = RuleData(system=system, finished=finished)
    used: dict[str, np.ndarray] = {}
    total: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        m = GPU_COLUMN.match(name)
        if not m:
            continue
        gpu = f"gpu{m.group(1)}"
        if m.group(2) == "util_percent":
            data.gpu_util[gpu] = system[name]
        elif m.group(2) == "mem_used_bytes":
            used[gpu] = np.asarray(values, np.float64)
        elif m.group(2) == "mem_total_bytes":
            total[gpu] = np.asarray(values, np.float64)
    for gpu in sorted(set(used) & set(total)):
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(total[gpu] > 0, 100.0 * used[gpu] / total[gpu], np.nan)
        data.gpu_mem[gpu] = Series(t_ns, share)
        system[f"{gpu}.mem_percent"] = data.gpu_mem[gpu]
    cores = [k for k in columns if re.fullmatch(r"cpu\d+_percent", k)]
    data.cpu_count = len(cores) or None
    if not data.gpu_util:
        data.gpu_util = _trace_gpu_util(traces)
    data.tb = [
        {"file": t.get("file"), "rank": t.get("report", {}).get("rank"), **t["tb_brief"]}
        for t in traces
        if isinstance(t.get("tb_brief"), dict)
    ]
    if steps is not None and len(steps[0]):
        data.step_start_ns, data.step_dur_ns, data.step_numbers = (np.asarray(a, np.int64) for a in steps)
    else:
        _trace_steps(data, traces)
    starts, durs = [], []
    if dataloader is not None:
        starts.append(np.asarray(dataloader[0], np.int64))
        durs.append(np.asarray(dataloader[1], np.int64))
    for t in traces:
        dl = t.get("dataloader") or {}
        if dl.get("start_ns"):
            starts.append(np.asarray(dl["start_ns"], np.int64))
            durs.append(np.asarray(dl["dur_ns"], np.int64))
    if starts:
        s, d = np.concatenate(starts), np.concatenate(durs)
        order = np.argsort(s, kind="stable")
        data.dataloader_start_ns, data.dataloader_ns = s[order], d[order]
    workers = job.get("dataloader_workers")
    data.dataloader_workers = workers if isinstance(workers, int) else None
    start, end = job.get("start_ns"), job.get("end_ns")
    data.job_start_ns = start if isinstance(start, int) else None
    data.job_end_ns = end if isinstance(end, int) else (int(t_ns[-1]) if len(t_ns) else None)
    return data


def _trace_gpu_util(traces: Sequence[dict[str, Any]]) -> dict[str, Series]:
    out: dict[str, Series] = {}
    for i, t in enumerate(traces):
        for u in (t.get("report") or {}).get("utilization") or []:
            busy = np.asarray(u["busy_pct"], np.float64)
            t_ns = (u["start_us"] * 1000 + u["bucket_us"] * 1000 * np.arange(len(busy))).astype(np.int64)
            key = f"gpu{u['device']}" if len(traces) == 1 else f"trace{i}.gpu{u['device']}"
            out[key] = Series(t_ns, busy, "trace")
    return out


def _trace_steps(data: RuleData, traces: Sequence[dict[str, Any]]) -> None:
    best = max(((t.get("report") or {}).get("steps") or [] for t in traces), key=len, default=[])
    if best:
        data.step_start_ns = np.array([round(s["start_us"] * 1000) for s in best], np.int64)
        data.step_dur_ns = np.array([round(s["duration_us"] * 1000) for s in best], np.int64)
        data.step_numbers = np.array([s["step"] for s in best], np.int64)
        data.step_source = "trace"


def annotation_ranges(
    records: Sequence[Any],
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """``((step start, dur, numbers), (data-loading start, dur))`` from the SDK's annotation records."""
    if not records:
        z = np.zeros(0, np.int64)
        return (z, z, z), (z, z)
    kind = np.array(list(map(attrgetter("kind"), records)))
    start = np.fromiter(map(attrgetter("start_ns"), records), np.int64, len(records))
    dur = np.maximum(np.fromiter(map(attrgetter("end_ns"), records), np.int64, len(records)) - start, 0)
    is_step = kind == "step"
    rows = np.flatnonzero(is_step)
    rows = rows[np.argsort(start[rows], kind="stable")]
    numbers = np.array([-1 if records[i].step is None else records[i].step for i in rows.tolist()], np.int64)
    names = np.array(list(map(attrgetter("name"), records)))
    uniq, inverse = np.unique(names, return_inverse=True)
    loading = np.array([bool(DATALOADER.search(n)) for n in uniq.tolist()], dtype=bool)  # once per name
    dl = np.flatnonzero(~is_step & loading[inverse]) if len(uniq) else np.zeros(0, np.int64)
    return (start[rows], dur[rows], numbers), (start[dl], dur[dl])


def trace_dataloader(store: Any, limit: int = 100_000) -> dict[str, list[int]]:
    """``{"start_ns", "dur_ns"}`` of a trace's data-loading events (``enumerate(DataLoader)…``)."""
    names = store.name_list
    hit = np.array([bool(DATALOADER.search(n)) for n in names], dtype=bool)  # once per distinct name
    if not len(hit) or not hit.any():
        return {"start_ns": [], "dur_ns": []}
    rows = np.flatnonzero(hit[store.col("name_id")])[:limit]
    return {"start_ns": store.col("ts_ns")[rows].tolist(), "dur_ns": store.col("dur_ns")[rows].tolist()}


__all__ = ["DATALOADER", "annotation_ranges", "from_columns", "system_columns", "trace_dataloader"]
