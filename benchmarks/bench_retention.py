"""The series retention's cost and gain: rolling a job's series up to 60 s and 1 h aggregates (what
the retention task does once per job), the stored size before and after each tier, and a metrics
query on the rolled series against the same query at full resolution.

    .venv/bin/python benchmarks/bench_retention.py [--samples 500000] [--columns 20] [--repeat 3]

The job is synthetic: ``--samples`` system samples at 1 Hz of ``--columns`` metrics (500 000 is
about 6 days). CPU time, best of ``--repeat``. Anchor, measured in the same run: ``numpy.sort`` of
1M float64.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import numpy as np

from profilerhub_analysis.metrics_api import datapoints
from profilerhub_analysis.rollup import keep, roll_up
from profilerhub_analysis.series import JobSeries, pack, unpack

T0 = 1_700_000_000_000_000_000
S = 10**9


def best(fn: Callable[[], object], repeat: int) -> float:
    out = []
    for _ in range(repeat):
        started = time.process_time()
        fn()
        out.append(time.process_time() - started)
    return min(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--samples", type=int, default=500_000)
    parser.add_argument("--columns", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    values = rng.uniform(0, 100, 1_000_000)
    anchor = best(lambda: np.sort(values), args.repeat)
    t = T0 + np.arange(args.samples, dtype=np.int64) * S
    columns = {f"m{i}": rng.uniform(0, 100, args.samples) for i in range(args.columns)}
    full = JobSeries(sys_t_ns=t, sys=columns)
    rolled = roll_up(full, [60 * S, 3600 * S])
    roll_s = best(lambda: roll_up(full, [60 * S, 3600 * S]), args.repeat)
    sizes = [len(pack(s)) / 1e6 for s in (full, rolled, keep(rolled, [3600 * S]))]
    stored = unpack(pack(rolled))
    query_full = best(lambda: datapoints(full, "m0", "Average", 3600), args.repeat)
    query_rolled = best(lambda: datapoints(stored, "m0", "Average", 3600), args.repeat)
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    print(f"anchor: numpy.sort of 1M float64 {anchor * 1e3:.1f} ms")
    print(f"job: {args.samples} samples x {args.columns} metrics")
    print(f"roll up to 60 s + 1 h: {roll_s:.2f} s CPU")
    print(f"stored: full {sizes[0]:.1f} MB, 60 s + 1 h {sizes[1]:.1f} MB, 1 h alone {sizes[2]:.2f} MB")
    print(
        f"Average per hour of one metric: full {query_full * 1e3:.1f} ms, rolled {query_rolled * 1e3:.2f} ms"
    )


if __name__ == "__main__":
    main()
