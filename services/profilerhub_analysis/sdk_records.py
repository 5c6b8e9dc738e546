"""The SDK's own records (steps, annotations, training metrics, system samples) and what they say.

Inputs are what the SDK writes (``docs/sdk.md``): ``annotations/*.jsonl.gz`` (steps and annotated
ranges, ns timestamps), ``metrics/*.jsonl.gz`` (``log_metric`` and metric definitions matched on
stdout), ``system/*.jsonl.gz`` (psutil/NVML samples), decoded with the structs below. Pure
functions, used at ingest (the job's summary) and by the profiler app for a job still running
(what has streamed so far). Every aggregation runs on numpy arrays; Python loops only run once
per distinct name or metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from profilerhub_analysis.dashboard import histogram

SERIES_POINTS = 300
"""Longest series kept in the summary (system metrics and training metrics are downsampled)."""
TOP_ANNOTATIONS = 200
STEP_ITEMS = 1000


class AnnotationRecord(msgspec.Struct, gc=False):
    """One line of ``annotations/*.jsonl.gz``: a step or an annotated range."""

    kind: str
    name: str
    start_ns: int
    end_ns: int
    thread: int | None = None
    thread_name: str | None = None
    depth: int = 0
    step: int | None = None


class MetricRecord(msgspec.Struct, gc=False):
    """One line of ``metrics/*.jsonl.gz``; ``value`` is None for NaN/inf (see ``nonfinite``)."""

    name: str
    value: float | None
    ts_ns: int
    step: int | None = None
    source: str = "log_metric"


def _ms(ns: np.ndarray | float) -> Any:
    return np.round(np.asarray(ns, dtype=np.float64) / 1e6, 3)


def _stats_ms(durations_ns: np.ndarray) -> dict[str, Any]:
    d = durations_ns.astype(np.float64)
    return {
        "count": int(len(d)),
        "total_ms": float(_ms(d.sum())),
        "mean_ms": float(_ms(d.mean())),
        "median_ms": float(_ms(np.median(d))),
        "p90_ms": float(_ms(np.percentile(d, 90))),
        "min_ms": float(_ms(d.min())),
        "max_ms": float(_ms(d.max())),
    }


def pick_points(n: int, limit: int = SERIES_POINTS) -> np.ndarray:
    """Indices of at most ``limit`` evenly spread points of ``n``, first and last included."""
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))


def downsample_mean(t: np.ndarray, v: np.ndarray, limit: int = SERIES_POINTS) -> list[list[float]]:
    """``[[t, mean v], ...]`` over at most ``limit`` equal-count buckets (keeps the series' level)."""
    if len(t) <= limit:
        return [[float(a), float(b)] for a, b in zip(t.tolist(), v.tolist(), strict=True)]
    edges = np.linspace(0, len(t), limit + 1).astype(np.int64)
    sums = np.add.reduceat(v, edges[:-1])
    counts = np.diff(edges)
    t_mid = t[(edges[:-1] + edges[1:] - 1) // 2]
    return [[float(a), float(b)] for a, b in zip(t_mid.tolist(), (sums / counts).tolist(), strict=True)]


def steps_and_annotations(records: Sequence[AnnotationRecord]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``steps`` section (durations) and annotations aggregated by name, most time first."""
    if not records:
        return {"count": 0, "items": []}, []
    kind = np.array(list(map(attrgetter("kind"), records)))
    start = np.fromiter(map(attrgetter("start_ns"), records), np.int64, len(records))
    end = np.fromiter(map(attrgetter("end_ns"), records), np.int64, len(records))
    dur = np.maximum(end - start, 0)
    is_step = kind == "step"
    steps: dict[str, Any] = {"count": 0, "items": []}
    if is_step.any():
        rows = np.flatnonzero(is_step)
        rows = rows[np.argsort(start[rows], kind="stable")]
        numbers = [records[i].step for i in rows.tolist()]
        keep = pick_points(len(rows), STEP_ITEMS)
        steps = _stats_ms(dur[rows]) | {
            "items": [
                {"step": numbers[i], "start_ns": int(start[rows[i]]), "dur_ms": float(_ms(dur[rows[i]]))}
                for i in keep.tolist()
            ]
        }
    ann = np.flatnonzero(~is_step)
    if not len(ann):
        return steps, []
    names, inverse = np.unique(np.array([records[i].name for i in ann.tolist()]), return_inverse=True)
    d = dur[ann].astype(np.float64)
    counts = np.bincount(inverse, minlength=len(names))
    totals = np.bincount(inverse, weights=d, minlength=len(names))
    maxes = np.zeros(len(names))
    np.maximum.at(maxes, inverse, d)
    order = np.argsort(-totals, kind="stable")[:TOP_ANNOTATIONS]
    by_name = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[by_name], np.arange(len(names) + 1))
    annotations = [
        {
            "name": str(names[i]),
            "count": int(counts[i]),
            "total_ms": float(_ms(totals[i])),
            "mean_ms": float(_ms(totals[i] / counts[i])),
            "max_ms": float(_ms(maxes[i])),
            # durations in µs, like the trace's annotation histograms
            "histogram": histogram(d[by_name[bounds[i] : bounds[i + 1]]] / 1e3),
        }
        for i in order.tolist()
    ]
    return steps, annotations


def training_metrics(records: Sequence[MetricRecord], start_ns: int | None = None) -> dict[str, Any]:
    """Per metric name: count, last, min, mean, max, ``series`` ``[[step, value], ...]`` and
    ``time_series`` ``[[seconds, value], ...]`` (seconds since ``start_ns``, the run's start, or
    the first record)."""
    out: dict[str, Any] = {}
    if not records:
        return out
    names, inverse = np.unique(np.array(list(map(attrgetter("name"), records))), return_inverse=True)
    values = np.array([np.nan if r.value is None else r.value for r in records], dtype=np.float64)
    steps = np.array([-1 if r.step is None else r.step for r in records], dtype=np.int64)
    ts = np.fromiter(map(attrgetter("ts_ns"), records), np.int64, len(records))
    order = np.lexsort((ts, inverse))
    bounds = np.searchsorted(inverse[order], np.arange(len(names) + 1))
    seconds = np.round((ts - (start_ns if start_ns is not None else int(ts.min()))) / 1e9, 3)
    for i, name in enumerate(names.tolist()):
        rows = order[bounds[i] : bounds[i + 1]]
        v, s = values[rows], steps[rows]
        finite = np.isfinite(v)
        keep = pick_points(len(rows))
        out[name] = {
            "count": int(len(rows)),
            "nonfinite": int((~finite).sum()),
            "last": float(v[finite][-1]) if finite.any() else None,
            "min": float(v[finite].min()) if finite.any() else None,
            "mean": float(v[finite].mean()) if finite.any() else None,
            "max": float(v[finite].max()) if finite.any() else None,
            "series": [
                [None if s[k] < 0 else int(s[k]), float(v[k]) if finite[k] else None] for k in keep.tolist()
            ],
            "time_series": [
                [float(seconds[rows[k]]), float(v[k]) if finite[k] else None] for k in keep.tolist()
            ],
        }
    return out


class GpuSample(msgspec.Struct, gc=False):
    """One GPU in a system sample (NVML)."""

    index: int = 0
    util_percent: float | None = None
    mem_util_percent: float | None = None
    mem_used_bytes: float | None = None
    mem_total_bytes: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None


class SystemSample(msgspec.Struct, gc=False):
    """One line of ``system/*.jsonl.gz`` (psutil and NVML); fields a sampler could not read are absent."""

    ts_ns: int
    cpu_percent: float | None = None
    cpu_percent_per_core: list[float] = msgspec.field(default_factory=list)
    mem_used_bytes: float | None = None
    mem_total_bytes: float | None = None
    mem_percent: float | None = None
    cpu_iowait_percent: float | None = None
    proc_cpu_percent: float | None = None
    proc_rss_bytes: float | None = None
    disk_read_bytes_per_s: float | None = None
    disk_write_bytes_per_s: float | None = None
    net_recv_bytes_per_s: float | None = None
    net_sent_bytes_per_s: float | None = None
    disk_percent: float | None = None
    """How full the disk of the run's working directory is (%)."""
    gpus: list[GpuSample] = msgspec.field(default_factory=list)


_SCALARS = tuple(
    f for f in SystemSample.__struct_fields__ if f not in ("ts_ns", "cpu_percent_per_core", "gpus")
)
_GPU_FIELDS = tuple(f for f in GpuSample.__struct_fields__ if f != "index")


def _floats(values: Sequence[Any]) -> np.ndarray:
    """Numbers (None -> NaN) as a float64 array."""
    return (
        np.array(values, dtype=np.float64)
        if None not in values
        else np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    )


def _ragged(rows: Sequence[Sequence[float]]) -> np.ndarray:
    """Rows of possibly different lengths as a 2-D float array padded with NaN."""
    width = max(map(len, rows), default=0)
    out = np.full((len(rows), width), np.nan)
    lengths = np.fromiter(map(len, rows), np.int64, len(rows))
    if width and (lengths == width).all():
        return np.array(rows, dtype=np.float64)
    for i, row in enumerate(rows):  # only when core counts differ between samples (never in practice)
        out[i, : len(row)] = row
    return out


def _numeric_columns(samples: Sequence[SystemSample]) -> dict[str, np.ndarray]:
    """Float columns: the scalar fields, ``cpuN_percent`` per core and ``gpuN.<field>`` per GPU."""
    columns = {f: _floats(list(map(attrgetter(f), samples))) for f in _SCALARS}
    cores = _ragged(list(map(attrgetter("cpu_percent_per_core"), samples)))
    columns.update({f"cpu{i}_percent": cores[:, i] for i in range(cores.shape[1])})
    gpus = list(map(attrgetter("gpus"), samples))
    indices = sorted({g.index for sample in gpus for g in sample}) if any(gpus) else []
    for index in indices:  # once per GPU and field, not per sample
        per_sample = [next((g for g in sample if g.index == index), None) for sample in gpus]
        for f in _GPU_FIELDS:
            columns[f"gpu{index}.{f}"] = _floats([None if g is None else getattr(g, f) for g in per_sample])
    return columns


def system_metrics(samples: Sequence[SystemSample], start_ns: int | None) -> dict[str, Any]:
    """Per system metric: min, mean, max and a downsampled ``series`` ``[[seconds, value], ...]``
    (seconds since ``start_ns``, the run's start, or the first sample)."""
    if not samples:
        return {"samples": 0, "metrics": {}}
    ts = np.fromiter(map(attrgetter("ts_ns"), samples), np.int64, len(samples))
    order = np.argsort(ts, kind="stable")
    ts = ts[order]
    t0 = start_ns if start_ns is not None else int(ts[0])
    seconds = np.round((ts - t0) / 1e9, 3)
    metrics: dict[str, Any] = {}
    for name, unordered in _numeric_columns(samples).items():
        column = unordered[order]
        ok = np.isfinite(column)
        if not ok.any():
            continue
        v = column[ok]
        metrics[name] = {
            "min": round(float(v.min()), 3),
            "mean": round(float(v.mean()), 3),
            "max": round(float(v.max()), 3),
            "series": downsample_mean(seconds[ok], v),
        }
    return {"samples": int(len(ts)), "duration_s": float(seconds[-1] - seconds[0]), "metrics": metrics}


__all__ = [
    "SERIES_POINTS",
    "AnnotationRecord",
    "GpuSample",
    "MetricRecord",
    "SystemSample",
    "downsample_mean",
    "pick_points",
    "steps_and_annotations",
    "system_metrics",
    "training_metrics",
]
