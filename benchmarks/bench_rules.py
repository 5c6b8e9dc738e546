"""Rule evaluation speed: a full ProfilerReport on a 1M-event job, and what live evaluation costs a
worker core (goals: under 2 s beyond ingest; under 1 % of a core per running job at a 60 s scan).

    .venv/bin/python benchmarks/bench_rules.py [--events 1000000] [--repeat 3]

The job is synthetic, at SDK rates: system samples every 100 ms with 8 GPUs (utilisation and
memory), a step and a data-loader fetch per step, a few stalls; ``--events`` counts samples +
steps + fetches (half samples). "Beyond ingest": the series is built already (ingest builds it
anyway), so the figure is ``evaluate_job`` itself. Live: one scan of a running job as
``live_rules`` does it (unpack the cached series and the window memo the previous scan kept with
it, append the last 60 s of samples, evaluate, pack both again) after 10 min, 1 h and 8 h of
training; its CPU time over the 60 s it stands for is the share of a core. ``from scratch`` is the
same scan with the memo dropped (what a chunk that sorts in earlier costs). Anchor, measured in
the same run: ``numpy.sort`` of 1M float64.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from profilerhub_analysis.rules.base import WindowMemo
from profilerhub_analysis.rules.job import evaluate_job
from profilerhub_analysis.series import JobSeries, extras, pack, unpack

T0 = 1_700_000_000_000_000_000
SAMPLE_NS = 100_000_000
GPUS = 8


def job(samples: int, steps: int, seed: int = 0, t0: int = T0) -> JobSeries:
    rng = np.random.default_rng(seed)
    t = t0 + np.arange(samples, dtype=np.int64) * SAMPLE_NS
    sys_cols = {"cpu_percent": rng.uniform(20, 60, samples), "cpu_iowait_percent": rng.uniform(0, 5, samples)}
    for g in range(GPUS):
        sys_cols[f"gpu{g}.util_percent"] = rng.uniform(40, 95, samples)
        sys_cols[f"gpu{g}.mem_used_bytes"] = rng.uniform(1e9, 2e9, samples)
        sys_cols[f"gpu{g}.mem_total_bytes"] = np.full(samples, 8e9)
    span = samples * SAMPLE_NS
    step_ns = max(span // max(steps, 1), 1)
    start = t0 + np.arange(steps, dtype=np.int64) * step_ns
    dur = (step_ns * rng.uniform(0.8, 0.95, steps)).astype(np.int64)
    fetch = (step_ns * rng.uniform(0.01, 0.05, steps)).astype(np.int64)
    fetch[rng.choice(steps, size=min(20, steps), replace=False)] *= 40  # stalls
    return JobSeries(t, sys_cols, {}, (start, dur, np.arange(steps, dtype=np.int64)), (start, fetch))


def timed(fn, repeat: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(repeat):
        started = time.process_time()
        fn()
        out.append(time.process_time() - started)
    return out


def live_scan(cached: bytes, fresh: JobSeries, memo: bool = True) -> None:
    series, windows = unpack(cached), WindowMemo(extras(cached) if memo else None)
    joined = JobSeries(  # the fresh samples come after the cached ones: appended, nothing sorted
        np.concatenate([series.sys_t_ns, fresh.sys_t_ns]),
        {k: np.concatenate([v, fresh.sys[k]]) for k, v in series.sys.items()},
        {},
        tuple(np.concatenate([a, b]) for a, b in zip(series.steps, fresh.steps, strict=True)),  # type: ignore[arg-type]
        tuple(np.concatenate([a, b]) for a, b in zip(series.dataloader, fresh.dataloader, strict=True)),  # type: ignore[arg-type]
    )
    evaluate_job(None, joined, [], {"start_ns": T0}, finished=False, windows=windows)
    pack(joined, extra=windows.arrays(), flat=True)


def previous_scan(series: JobSeries) -> bytes:
    """The live cache as the scan before left it: the series and its window memo."""
    windows = WindowMemo()
    evaluate_job(None, series, [], {"start_ns": T0}, finished=False, windows=windows)
    return pack(series, extra=windows.arrays(), flat=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    data = np.random.default_rng(1).random(1_000_000)
    anchor = timed(lambda: np.sort(data), args.repeat)
    print(f"anchor: numpy.sort of 1M float64        best {min(anchor) * 1000:8.1f} ms")

    samples = args.events // 2
    steps = args.events - samples
    series = job(samples, steps // 2)
    full = timed(lambda: evaluate_job(None, series, [], {"start_ns": T0}, finished=True), args.repeat)
    shape = f"{samples:,} samples x {2 + 3 * GPUS} columns, {steps // 2:,} steps + fetches"
    print(f"ProfilerReport on {samples + steps // 2 * 2:,} events ({shape}):")
    print(f"  best {min(full):6.2f} s  median {statistics.median(full):6.2f} s CPU")
    print("goal: under 2 s")

    per_minute = 60 * 1_000_000_000 // SAMPLE_NS
    for label, minutes in (("10 min", 10), ("1 h", 60), ("8 h", 480)):
        cached = previous_scan(job(per_minute * minutes, 60 * minutes))
        fresh = job(per_minute, 60, seed=2, t0=T0 + per_minute * minutes * SAMPLE_NS)
        for how, memo in (("", True), (" from scratch", False)):
            cost = timed(lambda c=cached, f=fresh, m=memo: live_scan(c, f, m), args.repeat)  # type: ignore[misc]
            share = 100 * min(cost) / 60
            print(
                f"live scan after {label:>6} ({per_minute * minutes:>7,} samples){how}: "
                f"best {min(cost) * 1000:7.1f} ms CPU = {share:5.2f} % of a core at a 60 s scan interval"
            )
    print("goal: under 1 % of a core per running job")


if __name__ == "__main__":
    main()
