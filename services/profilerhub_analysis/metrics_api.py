"""CloudWatch-style statistics over a job's stored series (``series.npz``), for the metrics API.

Metric names: every system column (``cpu_percent``, ``gpu0.util_percent`` …) and every training
metric (``train:loss``). ``datapoints`` cuts ``[start, end)`` into periods of ``period`` seconds
(100 ms .. 1 h) and gives one statistic per non-empty period: ``Average``, ``Minimum``,
``Maximum``, ``Sum``, ``SampleCount``, ``p50``, ``p90``, ``p99`` (percentiles by numpy's default
linear interpolation). Non-finite values (a NaN loss) are left out of every statistic.
Vectorised: one ``reduceat`` per statistic, percentiles once per non-empty period.
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


def metric_names(series: JobSeries) -> list[dict[str, Any]]:
    """Each metric with its kind (``system`` or ``training``) and sample count."""
    out = [
        {"name": k, "kind": "system", "samples": int(np.isfinite(v).sum())}
        for k, v in sorted(series.sys.items())
    ]
    out += [
        {"name": k, "kind": "training", "samples": int(len(v[0]))} for k, v in sorted(series.metrics.items())
    ]
    return out


def final_values(series: JobSeries) -> list[dict[str, Any]]:
    """SageMaker's ``FinalMetricDataList``: each metric's last finite value and when."""
    out = []
    for name, (t, v) in [(k, (series.sys_t_ns, c)) for k, c in sorted(series.sys.items())] + [
        (k, (m[0], m[1])) for k, m in sorted(series.metrics.items())
    ]:
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
    ok = np.isfinite(v)
    t, v = t[ok], v[ok]
    if not len(t):
        return []
    start = int(t[0]) if start_ns is None else start_ns
    end = int(t[-1]) + 1 if end_ns is None else end_ns
    if end <= start:
        raise MetricQueryError("end must be after start")
    period = int(round(period_s * 1e9))
    if (end - start) // period > MAX_DATAPOINTS:
        raise MetricQueryError(f"more than {MAX_DATAPOINTS} periods; use a longer period or a shorter range")
    keep = (t >= start) & (t < end)
    t, v = t[keep], v[keep]
    if not len(t):
        return []
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    bucket = (t - start) // period
    firsts = np.flatnonzero(np.concatenate([[True], bucket[1:] != bucket[:-1]]))
    counts = np.diff(np.append(firsts, len(v)))
    if stat == "SampleCount":
        values = counts.astype(np.float64)
    elif stat == "Sum":
        values = np.add.reduceat(v, firsts)
    elif stat == "Average":
        values = np.add.reduceat(v, firsts) / counts
    elif stat == "Minimum":
        values = np.minimum.reduceat(v, firsts)
    elif stat == "Maximum":
        values = np.maximum.reduceat(v, firsts)
    else:
        q = float(stat[1:])
        values = np.array(
            [np.percentile(v[a : a + n], q) for a, n in zip(firsts.tolist(), counts.tolist(), strict=True)]
        )
    stamps = start + bucket[firsts] * period
    return [
        {"Timestamp_ns": int(a), stat: float(b)}
        for a, b in zip(stamps.tolist(), values.tolist(), strict=True)
    ]


__all__ = ["STATS", "MetricQueryError", "datapoints", "final_values", "metric_names"]
