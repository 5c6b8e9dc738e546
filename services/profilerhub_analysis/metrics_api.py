"""CloudWatch-style statistics over a job's stored series (``series.npz``), for the metrics API.

Metric names: every system column (``cpu_percent``, ``gpu0.util_percent`` …) and every training
metric (``train:loss``). ``datapoints`` cuts ``[start, end)`` into periods of ``period`` seconds
(100 ms .. 1 h) and gives one statistic per non-empty period: ``Average``, ``Minimum``,
``Maximum``, ``Sum``, ``SampleCount``, ``p50``, ``p90``, ``p99`` (percentiles by numpy's default
linear interpolation). Non-finite values (a NaN loss) are left out of every statistic.
Vectorised: one ``reduceat`` per statistic; percentiles by one sort within periods and numpy's
interpolation on whole columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.series import JobSeries

STATS = ("Average", "Minimum", "Maximum", "Sum", "SampleCount", "p50", "p90", "p99")
MIN_PERIOD_S = 0.1
MAX_PERIOD_S = 3600.0
MAX_DATAPOINTS = 100_000


class MetricQueryError(ValueError):
    """A query the metrics API refuses (unknown metric or statistic, bad period or range)."""


class ResolutionNotKept(MetricQueryError):
    """A period (or percentile) finer than what the series retention kept of the series."""


def metric_names(series: JobSeries) -> list[dict[str, Any]]:
    """Each metric with its kind (``system`` or ``training``) and sample count."""
    tier = series.rollups.get(series.resolution_ns, {})

    def count(name: str, values: np.ndarray) -> int:
        if series.rollups:  # the samples the aggregates were made of
            return int(tier[name]["count"].sum()) if name in tier else 0
        return int(np.isfinite(values).sum())

    out = [{"name": k, "kind": "system", "samples": count(k, v)} for k, v in sorted(series.sys.items())]
    out += [
        {"name": k, "kind": "training", "samples": count(k, m[1])} for k, m in sorted(series.metrics.items())
    ]
    return out


def final_values(series: JobSeries) -> list[dict[str, Any]]:
    """SageMaker's ``FinalMetricDataList``: each metric's last finite value and when."""
    out = []
    tier = series.rollups.get(series.resolution_ns)
    for name, (t, v) in [(k, (series.sys_t_ns, c)) for k, c in sorted(series.sys.items())] + [
        (k, (m[0], m[1])) for k, m in sorted(series.metrics.items())
    ]:
        if tier is not None:  # rolled up: each period keeps its last sample
            t, v = (tier[name]["last_t_ns"], tier[name]["last"]) if name in tier else (t[:0], v[:0])
        ok = np.flatnonzero(np.isfinite(v))
        if len(ok):
            out.append({"MetricName": name, "Value": float(v[ok[-1]]), "Timestamp_ns": int(t[ok[-1]])})
    return out


def samples(series: JobSeries, name: str) -> tuple[np.ndarray, np.ndarray]:
    if name in series.sys:
        return series.sys_t_ns, series.sys[name]
    if name in series.metrics:
        return series.metrics[name][0], series.metrics[name][1]
    raise MetricQueryError(f"the job has no metric {name!r}")


def datapoints(
    series: JobSeries,
    name: str,
    stat: str,
    period_s: float,
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> list[dict[str, Any]]:
    """``[{"Timestamp_ns", stat: value}]``, one per non-empty period, by time."""
    if stat not in STATS:
        raise MetricQueryError(f"stat must be one of {', '.join(STATS)}, not {stat!r}")
    if not MIN_PERIOD_S <= period_s <= MAX_PERIOD_S:
        raise MetricQueryError(f"period must be between {MIN_PERIOD_S} and {MAX_PERIOD_S:.0f} seconds")
    t, v = samples(series, name)
    period = int(round(period_s * 1e9))
    if series.rollups:
        return rolled_datapoints(series, name, stat, period, start_ns, end_ns)
    ok = np.isfinite(v)
    t, v = t[ok], v[ok]
    if not len(t):
        return []
    start = int(t[0]) if start_ns is None else start_ns
    end = int(t[-1]) + 1 if end_ns is None else end_ns
    _check_range(start, end, period)
    keep = (t >= start) & (t < end)
    t, v = t[keep], v[keep]
    if not len(t):
        return []
    order = np.argsort(t, kind="stable")
    stamps, values = bucket_stats(t[order], v[order], start, period, (stat,))
    return _points(stamps, stat, values[stat])


def _check_range(start: int, end: int, period: int) -> None:
    if end <= start:
        raise MetricQueryError("end must be after start")
    if (end - start) // period > MAX_DATAPOINTS:
        raise MetricQueryError(f"more than {MAX_DATAPOINTS} periods; use a longer period or a shorter range")


def rolled_datapoints(
    series: JobSeries, name: str, stat: str, period: int, start_ns: int | None, end_ns: int | None
) -> list[dict[str, Any]]:
    """The datapoints of a rolled-up series: whole periods of the finest kept resolution that
    divides ``period`` (percentiles only at a kept resolution itself: they do not add up)."""
    kept = sorted(series.rollups)
    fits = [r for r in kept if (period == r if stat.startswith("p") else period % r == 0)]
    if not fits:
        spelled = " or ".join(f"{r / 1e9:g} s" for r in kept)
        want = f"equal to {spelled}" if stat.startswith("p") else f"a multiple of {spelled}"
        raise ResolutionNotKept(
            f"this job's series are kept at {spelled} resolution (the hub's series retention "
            f"setting); {stat} needs a period {want}"
        )
    res = fits[0]
    rolled = series.rollups[res].get(name)
    if rolled is None or not len(rolled["t_ns"]):
        return []
    t = rolled["t_ns"]
    start = int(t[0]) if start_ns is None else start_ns // res * res  # whole kept periods
    end = int(t[-1]) + res if end_ns is None else -(-end_ns // res) * res
    _check_range(start, end, period)
    rows = np.flatnonzero((t >= start) & (t < end))
    if not len(rows):
        return []
    bucket = (t[rows] - start) // period
    firsts = np.flatnonzero(np.concatenate([[True], bucket[1:] != bucket[:-1]]))
    stamps = start + bucket[firsts] * period
    if stat.startswith("p"):
        return _points(stamps, stat, rolled[stat][rows])
    field = {"SampleCount": "count", "Sum": "sum", "Minimum": "min", "Maximum": "max", "Average": "sum"}[stat]
    ufunc = {"min": np.minimum, "max": np.maximum}.get(field, np.add)
    values = ufunc.reduceat(rolled[field][rows], firsts).astype(np.float64)
    if stat == "Average":
        values = values / np.add.reduceat(rolled["count"][rows], firsts)
    return _points(stamps, stat, values)


def _points(stamps: np.ndarray, stat: str, values: np.ndarray) -> list[dict[str, Any]]:
    return [
        {"Timestamp_ns": int(a), stat: float(b)}
        for a, b in zip(stamps.tolist(), values.tolist(), strict=True)
    ]


def bucket_stats(
    t: np.ndarray, v: np.ndarray, start: int, period: int, stats: tuple[str, ...]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Each non-empty period's start and ``stats`` of the finite samples ``(t, v)`` (sorted by
    ``t``, all at or after ``start``), periods ``[start + k*period, start + (k+1)*period)``."""
    bucket = (t - start) // period
    firsts = np.flatnonzero(np.concatenate([[True], bucket[1:] != bucket[:-1]]))
    counts = np.diff(np.append(firsts, len(v)))
    out: dict[str, np.ndarray] = {}
    sorted_v = None
    for stat in stats:
        if stat == "SampleCount":
            out[stat] = counts.astype(np.float64)
        elif stat in ("Sum", "Average"):
            total = np.add.reduceat(v, firsts)
            out[stat] = total if stat == "Sum" else total / counts
        elif stat == "Minimum":
            out[stat] = np.minimum.reduceat(v, firsts)
        elif stat == "Maximum":
            out[stat] = np.maximum.reduceat(v, firsts)
        else:
            if sorted_v is None:
                sorted_v = v[np.lexsort((v, bucket))]
            out[stat] = _percentiles(sorted_v, firsts, counts, float(stat[1:]))
    return start + bucket[firsts] * period, out


def _percentiles(sorted_v: np.ndarray, firsts: np.ndarray, counts: np.ndarray, q: float) -> np.ndarray:
    """``np.percentile(bucket, q)`` of every bucket at once (values sorted within each bucket):
    numpy's default linear interpolation, its arithmetic too, so the same floats."""
    virtual = (counts - 1) * (q / 100.0)
    below = np.floor(virtual).astype(np.int64)
    above = np.minimum(below + 1, counts - 1)
    gamma = virtual - below
    a, b = sorted_v[firsts + below], sorted_v[firsts + above]
    diff = b - a
    return np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)


__all__ = [
    "STATS",
    "MetricQueryError",
    "ResolutionNotKept",
    "bucket_stats",
    "datapoints",
    "final_values",
    "metric_names",
    "rolled_datapoints",
]
