"""``profilerhub analyze`` of a small trace, wall time from process start (goal: under 0.3 s).

    .venv/bin/python benchmarks/bench_analyze_startup.py [--repeat 7] [--trace PATH]

Runs the command as a new process each time (what analysing a folder of small traces one process
each costs) and prints the best and median wall time, for the table and for ``-f json``; as the
anchor measured in the same run, the wall time of ``python -c pass`` (the interpreter alone). The
child's CPU time (user + system) is printed too: on a loaded machine it moves less than the wall.
The trace defaults to ``../shared/traces/torch-cpu/mlp_cpu_10steps_stack.pt.trace.json.gz``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "traces" / "torch-cpu" / "mlp_cpu_10steps_stack.pt.trace.json.gz"


def wall(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--trace", type=Path, default=TRACE)
    args = parser.parse_args()
    cli = Path(sys.executable).with_name("profilerhub")
    command = [str(cli)] if cli.exists() else [sys.executable, "-m", "profilerhub.cli.main"]
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    print(f"trace: {args.trace} ({args.trace.stat().st_size} bytes)")
    cases = {
        "python -c pass (anchor)": [sys.executable, "-c", "pass"],
        "profilerhub analyze": [*command, "analyze", str(args.trace)],
        "profilerhub analyze -f json": [*command, "analyze", "-f", "json", str(args.trace)],
    }
    for name, argv in cases.items():
        wall(argv)  # warm the page cache
        runs, cpu = zip(*(wall(argv) for _ in range(args.repeat)), strict=True)
        print(
            f"{name:<30} best {min(runs) * 1000:7.1f} ms   median {statistics.median(runs) * 1000:7.1f} ms"
            f"   CPU best {min(cpu) * 1000:7.1f} ms"
        )
    print("goal: profilerhub analyze under 300 ms wall (best of the runs)")


if __name__ == "__main__":
    main()
