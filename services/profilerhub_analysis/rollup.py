"""Roll a job's series up to coarser resolutions, as the series retention setting asks (docs/rules.md).

``roll_up(series, resolutions_ns)`` computes every resolution's aggregates (``ROLLUP_FIELDS``) from
the full-resolution samples at once, so each resolution's percentiles are exact rather than
percentiles of percentiles; ``keep(series, resolutions_ns)`` drops the finer ones as the job ages.
Periods are aligned to multiples of the resolution in epoch time, so a coarser query period that
is a multiple of a kept resolution sums whole periods. In both results the plain columns
(``sys``, ``metrics``) hold the finest kept resolution's averages, for the readers that want a
series rather than statistics (rules, the report, the dashboard).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from profilerhub_analysis.metrics_api import bucket_stats
from profilerhub_analysis.series import JobSeries, Rollup

_STATS = {"count": "SampleCount", "sum": "Sum", "min": "Minimum", "max": "Maximum"}
_STATS |= {"p50": "p50", "p90": "p90", "p99": "p99"}


def roll_up(series: JobSeries, resolutions_ns: Sequence[int]) -> JobSeries:
    """``series`` (at full resolution) as the aggregates of each of ``resolutions_ns``."""
    if series.rollups:
        raise ValueError("the series is rolled up already; keep() drops its finer resolutions")
    if not resolutions_ns or min(resolutions_ns) <= 0:
        raise ValueError("roll up to at least one resolution, each above 0 ns")
    named: list[tuple[str, np.ndarray, np.ndarray, np.ndarray | None]]
    named = [(k, series.sys_t_ns, v, None) for k, v in series.sys.items()]
    named += [(k, t, v, s) for k, (t, v, s) in series.metrics.items()]
    rollups: dict[int, dict[str, Rollup]] = {int(r): {} for r in resolutions_ns}
    for name, t, v, step in named:
        ok = np.flatnonzero(np.isfinite(v))
        if not len(ok):
            continue
        order = ok[np.argsort(t[ok], kind="stable")]
        for res, tier in rollups.items():
            tier[name] = _aggregate(t[order], v[order], None if step is None else step[order], res)
    return _viewed(series, rollups)


def _aggregate(t: np.ndarray, v: np.ndarray, step: np.ndarray | None, res: int) -> Rollup:
    start = int(t[0]) // res * res
    stamps, stats = bucket_stats(t, v, start, res, tuple(_STATS.values()))
    bucket = (t - start) // res
    lasts = np.flatnonzero(np.append(bucket[1:] != bucket[:-1], True))
    out = {field: stats[stat] for field, stat in _STATS.items()}
    out["count"] = out["count"].astype(np.int64)
    out |= {"t_ns": stamps.astype(np.int64), "last": v[lasts], "last_t_ns": t[lasts].astype(np.int64)}
    out["step"] = np.full(len(lasts), -1, np.int64) if step is None else step[lasts].astype(np.int64)
    return out


def keep(series: JobSeries, resolutions_ns: Iterable[int]) -> JobSeries:
    """A rolled-up ``series`` with only the resolutions in ``resolutions_ns`` (at least one)."""
    wanted = {int(r) for r in resolutions_ns}
    rollups = {r: tier for r, tier in series.rollups.items() if r in wanted}
    if not rollups:
        raise ValueError("keep at least one of the series' resolutions")
    return _viewed(series, rollups)


def _viewed(series: JobSeries, rollups: dict[int, dict[str, Rollup]]) -> JobSeries:
    """``series`` with ``rollups``, its columns the averages of the finest of them."""
    tier = rollups[min(rollups)]
    sys_rolled = [tier[k] for k in series.sys if k in tier]
    sys_t = (
        np.unique(np.concatenate([r["t_ns"] for r in sys_rolled])) if sys_rolled else np.zeros(0, np.int64)
    )
    sys: dict[str, np.ndarray] = {}
    for name in series.sys:
        column = np.full(len(sys_t), np.nan)
        if name in tier:
            r = tier[name]
            column[np.searchsorted(sys_t, r["t_ns"])] = r["sum"] / r["count"]
        sys[name] = column
    metrics = {}
    for name in series.metrics:
        if name in tier:
            r = tier[name]
            metrics[name] = (r["t_ns"], r["sum"] / r["count"], r["step"])
        else:
            metrics[name] = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64))
    return JobSeries(
        sys_t_ns=sys_t,
        sys=sys,
        metrics=metrics,
        steps=series.steps,
        dataloader=series.dataloader,
        rollups=rollups,
    )


__all__ = ["keep", "roll_up"]
