#!/usr/bin/env python3
"""Hub start-up: from ``profilerhub hub`` spawned to its first ``/healthz`` 200, and where it goes.

Byte-compiles the sources first (as ``pip install`` and ``make install`` do; where
``PYTHONDONTWRITEBYTECODE`` is set, a source without its ``.pyc`` would be compiled again by every
start). Prepares a home with a migrated SQLite database (``profilerhub db upgrade``), then ``--repeat``
times starts ``profilerhub hub`` (one server process) and polls ``/healthz`` every 5 ms; prints
each start's wall time and the CPU time the hub process had used when it first answered (less
sensitive to the machine's load than the wall time: on a busy machine the start waits for a core),
the best and the median of each, the import of ``profilerhub_hub.main`` alone in a fresh
interpreter (wall and CPU), its heaviest imports (``python -X importtime``, self time by
top-level package, top ``--top``), what a second app costs in a process that has built one
(``create_app`` and its first requests, as the test suite builds hundreds, in a fresh
interpreter: CPU per app, and per request once built), and the machine's load average before
and after.

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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_once(env: dict[str, str], port: int) -> tuple[float, float]:
    """(wall seconds from spawn to the first /healthz 200, the hub's CPU seconds by then)."""
    started = time.perf_counter()
    hub = subprocess.Popen(
        [str(BIN / "profilerhub"), "hub"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    return time.perf_counter() - started, cpu_seconds(hub.pid)
            except httpx.HTTPError:
                pass
            if hub.poll() is not None:
                raise SystemExit(f"the hub exited with {hub.returncode} before answering")
            time.sleep(0.005)
    finally:
        hub.terminate()
        hub.wait(30)


def import_seconds() -> tuple[float, float]:
    """(wall, CPU) seconds of ``import profilerhub_hub.main`` in a fresh interpreter."""
    code = (
        "import time; t, c = time.perf_counter(), time.process_time(); import profilerhub_hub.main; "
        "print(time.perf_counter() - t, time.process_time() - c)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    wall, cpu = done.stdout.split()
    return float(wall), float(cpu)


# In a fresh interpreter: one app built and used (the imports), then ``repeat`` more, each with the
# first requests a test makes (a probe, the API, the console, the proxy), then one route's CPU.
IN_PROCESS = """
import sys, tempfile, time
from starlette.testclient import TestClient
from profilerhub_core.db.migrate import upgrade
from profilerhub_core.db.session import make_engine
from profilerhub_core.settings import Settings
from profilerhub_hub.main import create_app
settings = Settings(home=tempfile.mkdtemp(), redis_url="")
engine = make_engine(settings)
upgrade(engine)
def used_app():
    with TestClient(create_app(settings, engine=engine)) as client:
        for path in ("/healthz", "/api/v1/me", "/api/v1/domains", "/console/sign-in", "/apps/x/"):
            client.get(path)
        return client
used_app()
repeat = int(sys.argv[1])
started = time.process_time()
for _ in range(repeat):
    used_app()
per_app = (time.process_time() - started) / repeat
with TestClient(create_app(settings, engine=engine)) as client:
    client.get("/api/v1/domains")
    started = time.process_time()
    for _ in range(20 * repeat):
        client.get("/api/v1/domains/ml/users/alice/jobs")  # no token: a 401 through the whole stack
    per_request = (time.process_time() - started) / (20 * repeat)
print(per_app, per_request)
"""


def in_process(repeat: int) -> tuple[float, float]:
    """(CPU seconds of one more app built and first used, CPU seconds of one request) in-process."""
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, str(repeat)], capture_output=True, text=True, check=True
    )
    per_app, per_request = done.stdout.split()
    return float(per_app), float(per_request)


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
    root = Path(__file__).resolve().parent.parent
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(root / "services"), str(root / "workers")], check=True
    )
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
    walls, cpus = [w for w, _ in times], [c for _, c in times]
    print("start to /healthz: " + ", ".join(f"{t:.2f}" for t in walls) + " s")
    print(f"  best {min(walls):.2f} s, median {statistics.median(walls):.2f} s")
    print("  the hub's CPU by then: " + ", ".join(f"{c:.2f}" for c in cpus) + " s")
    print(f"  best {min(cpus):.2f} s, median {statistics.median(cpus):.2f} s")
    imports = [import_seconds() for _ in range(args.repeat)]
    print(
        f"import profilerhub_hub.main alone: median wall {statistics.median(w for w, _ in imports):.2f} s, "
        f"CPU {statistics.median(c for _, c in imports):.2f} s (best {min(c for _, c in imports):.2f} s)"
    )
    print("heaviest imports (self time by top-level package):")
    for seconds, name in heaviest_imports(args.top):
        print(f"  {seconds:6.3f} s  {name}")
    per_app, per_request = in_process(4 * args.repeat)
    print(
        f"in one process: another create_app and its first 5 requests {1000 * per_app:.1f} ms CPU; "
        f"a request (401) {1000 * per_request:.2f} ms CPU"
    )
    print(f"load after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
