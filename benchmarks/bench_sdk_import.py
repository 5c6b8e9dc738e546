"""How long ``import profilerhub`` takes in a fresh interpreter (goal: under 100 ms).

    .venv/bin/python benchmarks/bench_sdk_import.py [--repeat 5]

Prints the best and median of ``-X importtime``'s cumulative figure for ``profilerhub`` and, as the
anchor measured in the same run, the same figure for the standard library's ``json``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys


def import_us(module: str) -> int:
    """Cumulative microseconds ``-X importtime`` reports for ``module`` in a new interpreter."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    (line,) = [ln for ln in done.stderr.splitlines() if re.search(rf"\|\s+{re.escape(module)}$", ln)]
    return int(line.split("|")[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    for module in ("profilerhub", "json"):
        runs = [import_us(module) for _ in range(args.repeat)]
        print(
            f"import {module:<12} best {min(runs) / 1000:7.1f} ms   "
            f"median {statistics.median(runs) / 1000:7.1f} ms   ({args.repeat} runs)"
        )
    print("goal: import profilerhub under 100 ms (best of the runs)")


if __name__ == "__main__":
    main()
