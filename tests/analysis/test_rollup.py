"""Rolled-up series (the series retention): every statistic of every period that is a multiple of a
kept resolution equals numpy on the full samples, percentiles at a kept resolution itself, final
values and sample counts survive, and what cannot be answered is refused with the reason."""

from __future__ import annotations

import numpy as np
import pytest

from profilerhub_analysis.metrics_api import MetricQueryError, datapoints, final_values, metric_names
from profilerhub_analysis.rollup import keep, roll_up
from profilerhub_analysis.series import JobSeries, pack, unpack

S = 10**9
T0 = 1_700_000_000 * S + 123_456_789
RNG = np.random.default_rng(7)
N = 20_000
T = T0 + np.sort(RNG.integers(0, 3 * 3600 * S, N))  # three hours of irregular samples
CPU = RNG.uniform(0, 100, N)
CPU[RNG.random(N) < 0.1] = np.nan  # gaps: left out of every statistic
LOSS_T = T0 + np.arange(0, 3 * 3600, 7) * S
LOSS = RNG.normal(size=len(LOSS_T))
NUMPY = {
    "Average": np.mean, "Minimum": np.min, "Maximum": np.max, "Sum": np.sum, "SampleCount": len,
    "p50": lambda v: np.percentile(v, 50), "p90": lambda v: np.percentile(v, 90),
    "p99": lambda v: np.percentile(v, 99),
}  # fmt: skip


def full() -> JobSeries:
    return JobSeries(
        sys_t_ns=T,
        sys={"cpu_percent": CPU, "gpu0.util_percent": np.full(N, np.nan)},
        metrics={"train:loss": (LOSS_T, LOSS, np.arange(len(LOSS_T)))},
    )


def rolled() -> JobSeries:
    return unpack(pack(roll_up(full(), [60 * S, 3600 * S])))  # through the stored form


def expected(t: np.ndarray, v: np.ndarray, stat: str, period: int, kept: int) -> dict[int, float]:
    ok = np.isfinite(v)
    t, v = t[ok], v[ok]
    first = int(t[0]) // kept * kept
    buckets = (t - first) // period
    return {int(first + b * period): float(NUMPY[stat](v[buckets == b])) for b in np.unique(buckets)}


@pytest.mark.parametrize("period_s", [60, 120, 600, 3600])
def test_every_statistic_of_whole_kept_periods_matches_numpy_on_the_full_samples(period_s: int) -> None:
    series = rolled()
    for stat in NUMPY:
        if stat.startswith("p") and period_s not in (60, 3600):
            continue
        kept = period_s * S if stat.startswith("p") else 60 * S
        for name, (t, v) in {"cpu_percent": (T, CPU), "train:loss": (LOSS_T, LOSS)}.items():
            got = {d["Timestamp_ns"]: d[stat] for d in datapoints(series, name, stat, period_s)}
            want = expected(t, v, stat, period_s * S, kept)
            assert got.keys() == want.keys(), (name, stat)
            assert np.allclose(list(got.values()), list(want.values()), rtol=1e-12, atol=0), (name, stat)


def test_percentiles_at_a_kept_resolution_are_numpys_exactly() -> None:
    series = rolled()
    for period_s in (60, 3600):
        got = [d["p90"] for d in datapoints(series, "cpu_percent", "p90", period_s)]
        assert got == list(expected(T, CPU, "p90", period_s * S, period_s * S).values())


def test_a_range_is_widened_to_whole_kept_periods() -> None:
    series = rolled()
    start, end = T0 + 3600 * S + 17 * S, T0 + 2 * 3600 * S - 5 * S
    got = datapoints(series, "cpu_percent", "SampleCount", 60, start, end)
    first, last = start // (60 * S) * (60 * S), -(-end // (60 * S)) * (60 * S)
    assert got[0]["Timestamp_ns"] == first
    assert sum(d["SampleCount"] for d in got) == int(np.isfinite(CPU[(first <= T) & (last > T)]).sum())


def test_names_final_values_and_the_columns_survive_a_roll_up() -> None:
    before, after = full(), rolled()
    assert metric_names(after) == metric_names(before)
    assert final_values(after) == final_values(before)
    assert after.resolution_ns == 60 * S and sorted(after.rollups) == [60 * S, 3600 * S]
    assert np.all(after.sys_t_ns % (60 * S) == 0)  # the columns: each minute's average
    minute = (T - T[0] // (60 * S) * (60 * S)) < 60 * S
    assert after.sys["cpu_percent"][0] == pytest.approx(np.nanmean(CPU[minute]), rel=1e-12)
    assert np.isnan(after.sys["gpu0.util_percent"]).all()
    t, v, step = after.metrics["train:loss"]
    first_minute_end = LOSS_T[0] // (60 * S) * (60 * S) + 60 * S
    assert step[0] == np.flatnonzero(first_minute_end > LOSS_T)[-1]  # the minute's last step
    assert len(t) == len(v) == len(step)


def test_keep_drops_the_finer_resolutions() -> None:
    hourly = unpack(pack(keep(rolled(), [3600 * S])))
    assert hourly.resolution_ns == 3600 * S and len(hourly.sys_t_ns) <= 4
    assert final_values(hourly) == final_values(full())
    with pytest.raises(MetricQueryError, match="kept at 3600 s resolution"):
        datapoints(hourly, "cpu_percent", "Average", 60)
    with pytest.raises(ValueError, match="keep at least one"):
        keep(hourly, [60 * S])


@pytest.mark.parametrize(
    ("stat", "period_s", "says"),
    [("p90", 120, "needs a period equal to 60 s or 3600 s"), ("Average", 90, "a multiple of 60 s or 3600 s")],
)
def test_what_the_kept_periods_cannot_answer_is_refused(stat: str, period_s: float, says: str) -> None:
    with pytest.raises(MetricQueryError, match=says):
        datapoints(rolled(), "cpu_percent", stat, period_s)


def test_a_rolled_series_is_not_rolled_again() -> None:
    with pytest.raises(ValueError, match="rolled up already"):
        roll_up(rolled(), [3600 * S])
