#!/usr/bin/env python3
"""Hub start-up: from ``profilerhub hub`` spawned to its first ``/healthz`` 200, and where it goes.

Prepares a home with a migrated SQLite database (``profilerhub db upgrade``), then ``--repeat``
times starts ``profilerhub hub`` (one server process) and polls ``/healthz`` every 5 ms; prints
each start, the best and the median, the import of ``profilerhub_hub.main`` alone in a fresh
interpreter, its heaviest imports (``python -X importtime``, cumulative, top ``--top``), and the
machine's load average before and after (the figures mean little at a high load).

Usage:
  .venv/bin/python benchmarks/bench_hub_start.py [--repeat 5] [--top 12]
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_once(env: dict[str, str], port: int) -> float:
    started = time.perf_counter()
    hub = subprocess.Popen(
        [str(BIN / "profilerhub"), "hub"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    return time.perf_counter() - started
            except httpx.HTTPError:
                pass
            if hub.poll() is not None:
                raise SystemExit(f"the hub exited with {hub.returncode} before answering")
            time.sleep(0.005)
    finally:
        hub.terminate()
        hub.wait(30)


def import_seconds() -> float:
    code = "import time; t = time.perf_counter(); import profilerhub_hub.main; print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout)


def heaviest_imports(top: int) -> list[tuple[float, str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import profilerhub_hub.main"],
        capture_output=True,
        text=True,
        check=True,
    )
    by_package: dict[str, float] = {}
    for line in done.stderr.splitlines()[1:]:
        parts = line.split("|")
        if len(parts) == 3:
            top_name = parts[2].strip().split(".")[0]
            by_package[top_name] = by_package.get(top_name, 0.0) + int(parts[0].split(":")[1]) / 1e6
    return sorted(((s, n) for n, s in by_package.items()), reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    print("command:", shlex.join([".venv/bin/python", "benchmarks/bench_hub_start.py", *sys.argv[1:]]))
    print(f"load before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as home:
        port = free_port()
        env = {
            **os.environ,
            "PROFILERHUB_HOME": home,
            "PROFILERHUB_PORT": str(port),
            "PROFILERHUB_HUB_WORKERS": "1",
            "PROFILERHUB_REDIS_URL": "",
        }
        subprocess.run([str(BIN / "profilerhub"), "db", "upgrade"], env=env, check=True, capture_output=True)
        start_once(env, port)  # the first start also writes the admin token and the key
        times = [start_once(env, port) for _ in range(args.repeat)]
    print("start to /healthz: " + ", ".join(f"{t:.2f}" for t in times) + " s")
    print(f"  best {min(times):.2f} s, median {statistics.median(times):.2f} s")
    print(f"import profilerhub_hub.main alone: {import_seconds():.2f} s")
    print("heaviest imports (self time by top-level package):")
    for seconds, name in heaviest_imports(args.top):
        print(f"  {seconds:6.3f} s  {name}")
    print(f"load after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
