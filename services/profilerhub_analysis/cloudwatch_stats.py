"""A job's series as CloudWatch's ``/aws/sagemaker/TrainingJobs`` metrics: names and statistics.

SageMaker publishes a training job's metrics under its own names: each training metric by its
name (``train:loss``), and the instance's system metrics as ``CPUUtilization``,
``MemoryUtilization``, ``GPUUtilization``, ``GPUMemoryUtilization`` (percent; the GPU ones
summed over the GPUs, 0–100 per GPU, as SageMaker reports them) and ``DiskUtilization`` (how full
the disk of the run's working directory is: the SDK's ``disk_percent``).

    metric_names(series)                       the names a job has, training then system
    statistics(series, name, stats, period_s, start_ns, end_ns)
                                               (period starts, {stat: values}) for every non-empty
                                               period; several statistics in one pass

Statistics: ``Average``, ``Minimum``, ``Maximum``, ``Sum``, ``SampleCount`` and percentiles
``pNN`` (``p50``, ``p90``, ``p99.9`` …) over the finite samples, as ``metrics_api`` computes them
(the REST metrics API: the same numbers). A series the retention rolled up answers whole kept
periods; a period or percentile it no longer holds raises ``ResolutionNotKept`` (CloudWatch then
answers no datapoints, as it does for a resolution it has aged out).
"""

from __future__ import annotations

import re

import numpy as np

from profilerhub_analysis.metrics_api import (
    MetricQueryError,
    ResolutionNotKept,
    bucket_stats,
    rolled_datapoints,
)
from profilerhub_analysis.series import JobSeries

PERCENT = "Percent"
_GPU = re.compile(r"gpu(\d+)\.(util_percent|mem_used_bytes|mem_total_bytes)")
_PERCENTILE = re.compile(r"p(\d{1,2}(\.\d+)?|100)")
BASIC = ("Average", "Minimum", "Maximum", "Sum", "SampleCount")
SYSTEM = ("CPUUtilization", "MemoryUtilization", "GPUUtilization", "GPUMemoryUtilization", "DiskUtilization")


def check_stat(stat: str) -> str:
    """``stat`` if CloudWatch's and supported here, else ``MetricQueryError``."""
    if stat in BASIC or _PERCENTILE.fullmatch(stat):
        return stat
    raise MetricQueryError(
        f"statistic {stat[:40]!r} is not supported: use {', '.join(BASIC)} or a percentile pNN"
    )


def _gpus(series: JobSeries) -> list[int]:
    names = set(series.sys) | {n for tier in series.rollups.values() for n in tier}
    return sorted({int(m[1]) for n in names if (m := _GPU.fullmatch(n))})


def metric_names(series: JobSeries) -> list[str]:
    """The job's training metrics (sorted), then the SageMaker system metrics it has samples for."""
    names = sorted(series.metrics)
    columns = set(series.sys) | {n for tier in series.rollups.values() for n in tier}
    gpus = _gpus(series)
    present = {
        "CPUUtilization": "cpu_percent" in columns,
        "MemoryUtilization": "mem_percent" in columns,
        "DiskUtilization": "disk_percent" in columns,
        "GPUUtilization": any(f"gpu{i}.util_percent" in columns for i in gpus),
        "GPUMemoryUtilization": any(
            f"gpu{i}.mem_used_bytes" in columns and f"gpu{i}.mem_total_bytes" in columns for i in gpus
        ),
    }
    return names + [name for name in SYSTEM if present[name]]


def unit_of(name: str) -> str:
    return PERCENT if name in SYSTEM else "None"


def _column(series: JobSeries, name: str) -> tuple[np.ndarray, np.ndarray] | None:
    """A full-resolution series' samples of ``name`` (None when it has none)."""
    if name in series.metrics:
        return series.metrics[name][0], series.metrics[name][1]
    t, sys = series.sys_t_ns, series.sys
    if name == "CPUUtilization":
        return (t, sys["cpu_percent"]) if "cpu_percent" in sys else None
    if name == "MemoryUtilization":
        return (t, sys["mem_percent"]) if "mem_percent" in sys else None
    if name == "DiskUtilization":
        return (t, sys["disk_percent"]) if "disk_percent" in sys else None
    if name == "GPUUtilization":
        parts = [sys[f"gpu{i}.util_percent"] for i in _gpus(series) if f"gpu{i}.util_percent" in sys]
    elif name == "GPUMemoryUtilization":
        parts = [
            sys[f"gpu{i}.mem_used_bytes"] / sys[f"gpu{i}.mem_total_bytes"] * 100.0
            for i in _gpus(series)
            if f"gpu{i}.mem_used_bytes" in sys and f"gpu{i}.mem_total_bytes" in sys
        ]
    else:
        return None
    if not parts:
        return None
    stacked = np.vstack(parts)
    total = np.nansum(stacked, axis=0)
    total[np.isnan(stacked).all(axis=0)] = np.nan  # no GPU sampled then: no value, not 0
    return t, total


def _rolled_name(series: JobSeries, name: str) -> str | None:
    """The rolled-up column standing for ``name`` (sums over several GPUs do not roll up)."""
    if name in series.metrics:
        return name
    gpus = _gpus(series)
    return {
        "CPUUtilization": "cpu_percent",
        "MemoryUtilization": "mem_percent",
        "DiskUtilization": "disk_percent",
        "GPUUtilization": "gpu0.util_percent" if gpus == [0] else None,
    }.get(name)


def statistics(
    series: JobSeries,
    name: str,
    stats: tuple[str, ...],
    period_s: float,
    start_ns: int,
    end_ns: int,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Each non-empty period's start (ns) in ``[start_ns, end_ns)`` and each of ``stats`` there.
    A metric the job does not have: no periods. ``ResolutionNotKept`` as in the module's docstring."""
    stats = tuple(check_stat(s) for s in stats)
    period = int(round(period_s * 1e9))
    if period <= 0 or end_ns <= start_ns:
        raise MetricQueryError("the period must be positive and EndTime after StartTime")
    if series.rollups:
        return _rolled(series, name, stats, period, start_ns, end_ns)
    found = _column(series, name)
    if found is None:
        return np.zeros(0, np.int64), {s: np.zeros(0) for s in stats}
    t, v = found
    keep = np.isfinite(v) & (t >= start_ns) & (t < end_ns)
    t, v = t[keep], v[keep]
    order = np.argsort(t, kind="stable")
    if not len(t):
        return np.zeros(0, np.int64), {s: np.zeros(0) for s in stats}
    return bucket_stats(t[order], v[order], start_ns, period, stats)


def _rolled(
    series: JobSeries, name: str, stats: tuple[str, ...], period: int, start_ns: int, end_ns: int
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    column = _rolled_name(series, name)
    if column is None:
        return np.zeros(0, np.int64), {s: np.zeros(0) for s in stats}
    by_stat: dict[str, dict[int, float]] = {}
    for stat in stats:
        if stat.startswith("p") and stat not in ("p50", "p90", "p99"):
            raise ResolutionNotKept(f"{stat} is not kept once a series is rolled up (p50, p90, p99 are)")
        points = rolled_datapoints(series, column, stat, period, start_ns, end_ns)
        by_stat[stat] = {p["Timestamp_ns"]: p[stat] for p in points}
    stamps = sorted(set().union(*(set(v) for v in by_stat.values())))
    values = {s: np.array([by_stat[s].get(t, np.nan) for t in stamps]) for s in stats}
    return np.array(stamps, dtype=np.int64), values


__all__ = ["BASIC", "PERCENT", "SYSTEM", "check_stat", "metric_names", "statistics", "unit_of"]
