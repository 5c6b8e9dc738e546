"""How long ``make up``'s install takes on a fresh clone (goal: the hub answering within 90 s).

    python3 benchmarks/bench_make_up_install.py [--no-cache]

Times, in a new virtual environment under a temporary directory, what the Makefile's
``$(SERVER)`` rule runs: ``pip install --no-compile -e '.[server]'`` (pip's cache used unless
``--no-cache``: a second clone on the same machine), and, as the anchor measured in the same run,
creating the empty virtual environment itself. Also prints the load average, since on a shared
machine the figure is mostly CPU (unpacking ~160 packages), not the network.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-cache", action="store_true", help="download every wheel again")
    args = parser.parse_args()
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        made = timed([sys.executable, "-m", "venv", str(venv)])
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        pip += ["--no-compile", *(["--no-cache-dir"] if args.no_cache else []), "-e", f"{ROOT}[server]"]
        installed = timed(pip)
    print(f"anchor: python -m venv                  {made:7.1f} s")
    print(f"pip install --no-compile -e '.[server]'  {installed:7.1f} s   (cache: {not args.no_cache})")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
