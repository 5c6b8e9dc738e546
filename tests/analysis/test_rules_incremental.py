"""Live evaluation with the window memo gives what an evaluation from scratch gives, scan after
scan, on a series that grows at its end: cuts before patience, on a window's edge, at half a
window (where a last partial window starts to count), inside a window, and through the
``series.pack`` round trip the live cache makes."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import WindowMemo
from profilerhub_analysis.rules.job import evaluate_job
from profilerhub_analysis.series import FLAT, JobSeries, extras, pack, unpack

T0 = 10**18
STEP = 100_000_000
PATIENCE, WINDOW = 10, 20
SMALL = {"patience": PATIENCE, "window": WINDOW}
CONFIGS = [
    {"rule": "LowGPUUtilization", "parameters": SMALL},
    {"rule": "BatchSize", "parameters": SMALL},
    {"rule": "CPUBottleneck", "parameters": {"patience": PATIENCE}},
    {"rule": "GPUMemoryIncrease", "parameters": {"patience": PATIENCE, "window": 5}},
    {"rule": "OverallSystemUsage"},
]


def job(n: int, seed: int = 0) -> JobSeries:
    rng = np.random.default_rng(seed)
    t = T0 + np.arange(n, dtype=np.int64) * STEP
    cols = {"cpu_percent": rng.uniform(0, 100, n)}
    cols["cpu_percent"][rng.random(n) < 0.05] = np.nan  # unread samples: windows over the rest
    for g in range(2):
        util = rng.uniform(0, 100, n)
        util[rng.random(n) < 0.05] = np.nan
        cols[f"gpu{g}.util_percent"] = util
        cols[f"gpu{g}.mem_used_bytes"] = rng.uniform(0, 80, n)
        cols[f"gpu{g}.mem_total_bytes"] = np.full(n, 100.0)
    steps = (t[::10], np.full(len(t[::10]), STEP * 9), np.arange(len(t[::10]), dtype=np.int64))
    return JobSeries(t, cols, {}, steps, (t[::10], np.full(len(t[::10]), STEP)))


def prefix(s: JobSeries, n: int) -> JobSeries:
    assert s.steps is not None and s.dataloader is not None
    k = int(np.searchsorted(s.steps[0], s.sys_t_ns[n - 1], side="right")) if n else 0
    return JobSeries(
        s.sys_t_ns[:n],
        {name: v[:n] for name, v in s.sys.items()},
        {},
        tuple(a[:k] for a in s.steps),  # type: ignore[arg-type]
        tuple(a[:k] for a in s.dataloader),  # type: ignore[arg-type]
    )


def evaluate(s: JobSeries, configs: Any, memo: WindowMemo | None = None) -> dict[str, Any]:
    return evaluate_job(configs, s, [], {"start_ns": T0}, finished=False, windows=memo)


def test_scans_with_the_memo_equal_scans_from_scratch_at_every_edge() -> None:
    full = job(400)
    # before patience; patience + half a window -1 / exactly (the first window starts to count);
    # a window's edge and one past it; inside windows; then the whole series
    cuts = [5, 10, 19, 20, 30, 31, 45, 50, 69, 70, 71, 150, 151, 260, 399, 400]
    for configs in (CONFIGS, None):
        saved: dict[str, np.ndarray] = {}
        reused = 0
        for n in cuts:
            part = prefix(full, n)
            memo = WindowMemo(saved)
            assert evaluate(part, configs, memo) == evaluate(part, configs), (configs, n)
            reused += memo.reused
            packed = pack(part, extra=memo.arrays(), flat=n % 2 == 0)  # what the live cache keeps
            saved = extras(packed)
            assert np.array_equal(unpack(packed).sys_t_ns, part.sys_t_ns)
        if configs is CONFIGS:
            assert reused > 0  # the windows were taken from the memo, not computed again


def test_a_memo_made_for_other_parameters_is_not_used() -> None:
    s = job(300)
    memo = WindowMemo()
    evaluate(s, CONFIGS, memo)
    other = [{"rule": "LowGPUUtilization", "parameters": {"patience": PATIENCE, "window": 25}}]
    again = WindowMemo(memo.arrays())
    assert evaluate(s, other, again) == evaluate(s, other)
    assert again.reused == 0


def test_flat_and_npz_layouts_hold_the_same_series() -> None:
    t = np.arange(5, dtype=np.int64)
    metric = (t[:3], np.array([0.1, np.nan, 0.3]), np.array([-1, 1, 2]))
    s = JobSeries(t, {"cpu_percent": np.array([1, np.nan, 3, 4, 5.5])}, {"train:loss": metric, "é": metric},
                  (t[:2], t[:2], t[:2]), (t[:0], t[:0]))  # fmt: skip
    extra = {"LowGPUUtilization.gpu0|10|20|95,5": np.arange(6.0).reshape(2, 3), "empty": np.zeros((2, 0))}
    flat, npz = pack(s, extra, flat=True), pack(s, extra)
    assert flat.startswith(FLAT) and npz.startswith(b"PK")
    for data in (flat, npz):
        back = unpack(data)
        assert np.array_equal(back.sys_t_ns, t) and np.array_equal(
            back.sys["cpu_percent"], s.sys["cpu_percent"], equal_nan=True
        )
        assert back.metrics.keys() == s.metrics.keys() and back.metrics["é"][2].tolist() == [-1, 1, 2]
        assert back.steps is not None and back.steps[0].tolist() == [0, 1] and back.dataloader is not None
        got = extras(data)
        assert got.keys() == extra.keys() and all(
            np.array_equal(got[k], v) and got[k].shape == v.shape for k, v in extra.items()
        )
    assert unpack(pack(JobSeries(), flat=True)).sys == {}
