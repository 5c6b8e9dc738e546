"""``profilerhub up`` supervising through faults: its worker killed mid-spawn and its embedded Redis
killed are restarted (and ``up`` says so), the app being spawned ends InService once (adopted, not
doubled), and when ``up`` stops no app process outlives it; its hub killed with SIGKILL takes its
server processes with it, so the restarted hub gets the port."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from tests.e2e.apps_stack import FAST, pid_alive
from tests.faults.faults import assert_settled
from tests.support.hub import STACK_HUB_WORKERS, auth, wait_for

DESCRIBE = "/api/v1/domains/d1/users/{user}/apps/DetailedProfiler/default"


def _child(up: Any, word: str) -> psutil.Process:
    """The one process under ``up`` whose command line has ``word`` (worker, redis-server, hub):
    the topmost, as the hub's server processes are forked from it and share its command line."""
    found = [
        p for p in psutil.Process(up.process.pid).children(recursive=True) if word in " ".join(p.cmdline())
    ]
    top = [p for p in found if p.ppid() not in {q.pid for q in found}]
    assert len(top) == 1, [p.cmdline() for p in found]
    return top[0]


def test_up_restarts_a_killed_worker_and_redis_and_leaves_no_app_behind(
    hub_process: Any, tmp_path: Path
) -> None:
    gates = tmp_path / "spawn-gates"  # an app's spawn ends when the test opens its gate, or after 8 s
    gates.mkdir()
    env = {k: v for k, v in FAST.items() if k != "PROFILERHUB_SECRET_KEY"} | {
        "PROFILERHUB_SPAWNER": "profilerhub_worker.spawners.fakes:SlowSpawn",
        "PROFILERHUB_TEST_SLOW_SPAWN_SECONDS": "8",  # the window in which the worker is killed
        "PROFILERHUB_TEST_SPAWN_GATE": str(gates),
        "PROFILERHUB_HUB_WORKERS": STACK_HUB_WORKERS,
    }
    up = hub_process("up", env=env)
    admin = auth(up.admin_token())
    with httpx.Client(base_url=up.url, timeout=60) as client:
        client.post("/api/v1/domains", json={"name": "d1"}, headers=admin).raise_for_status()
        tokens = {}
        for user in ("alice", "bob"):
            client.post("/api/v1/domains/d1/users", json={"name": user}, headers=admin).raise_for_status()
            answer = client.post(f"/api/v1/domains/d1/users/{user}/tokens", json={}, headers=admin)
            tokens[user] = auth(answer.json()["token"])

        def status(user: str) -> str:
            return str(client.get(DESCRIBE.format(user=user), headers=tokens[user]).json()["status"])

        app_id = client.post("/api/v1/domains/d1/users/alice/apps", json={}, headers=tokens["alice"]).json()[
            "app_id"
        ]
        instance = up.home / "apps" / app_id / "instance.json"

        def spawning() -> bool:
            try:
                return bool(json.loads(instance.read_text()).get("port"))
            except (OSError, ValueError):
                return False

        wait_for(spawning, "alice's app process started by the slow spawn", 180, 0.1)
        first_pid = json.loads(instance.read_text())["pid"]
        _child(up, " worker").send_signal(signal.SIGKILL)
        killed = time.monotonic()
        up.wait_for_output("worker exited with code -9", 60)
        (gates / app_id).touch()  # the restarted worker's retry adopts the instance at once
        wait_for(lambda: status("alice") == "InService", "alice's app InService after the restart", 180, 0.2)
        worker_recovery = time.monotonic() - killed
        assert json.loads(instance.read_text())["pid"] == first_pid  # adopted, not started twice

        _child(up, "redis-server").send_signal(signal.SIGKILL)
        killed = time.monotonic()
        up.wait_for_output("redis is not running; restarting it", 60)
        bobs = client.post("/api/v1/domains/d1/users/bob/apps", json={}, headers=tokens["bob"])
        (gates / bobs.raise_for_status().json()["app_id"]).touch()
        wait_for(lambda: status("bob") == "InService", "bob's app InService after Redis came back", 180, 0.2)
        redis_recovery = time.monotonic() - killed
        # carol's app is mid-spawn when `up` stops (her gate stays shut): its process must not
        # outlive `up` either.
        client.post("/api/v1/domains/d1/users", json={"name": "carol"}, headers=admin).raise_for_status()
        carol = auth(
            client.post("/api/v1/domains/d1/users/carol/tokens", json={}, headers=admin).json()["token"]
        )
        carols = client.post("/api/v1/domains/d1/users/carol/apps", json={}, headers=carol).json()["app_id"]
        instance = up.home / "apps" / carols / "instance.json"
        wait_for(spawning, "carol's app process started by the slow spawn", 180, 0.1)
        app_pids = [
            json.loads(path.read_text())["pid"] for path in (up.home / "apps").glob("*/instance.json")
        ]
    everything = psutil.Process(up.process.pid).children(recursive=True)
    assert up.stop() == 0
    _, alive = psutil.wait_procs(everything, timeout=30)
    assert [p.cmdline() for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
    assert [pid for pid in app_pids if pid_alive(pid)] == []
    database = f"sqlite:///{up.home / 'profilerhub.db'}"
    with sqlite3.connect(database.removeprefix("sqlite:///")) as db:
        # carol's spawn either finished in the worker's warm shutdown (InService, suspended) or
        # was undone (Pending, nothing tried): the next `up` restarts or re-sends it.
        state = db.execute("SELECT status, spawner_state FROM apps WHERE id = ?", (carols,)).fetchone()
        assert state[0] == "InService" and '"suspended": true' in state[1] or state == ("Pending", "{}"), (
            state
        )
        db.execute("UPDATE apps SET status = 'Failed' WHERE id = ? AND status = 'Pending'", (carols,))
    assert_settled(database)
    print(
        f"\nup: worker kill -9 mid-spawn -> restarted, app InService {worker_recovery:.1f}s later; "
        f"redis kill -9 -> restarted, next app InService {redis_recovery:.1f}s later; "
        f"{len(app_pids)} app processes, 0 left after up stopped"
    )


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_hub_killed_with_sigkill_takes_its_server_processes_along_and_comes_back_on_its_port(
    hub_process: Any,
) -> None:
    up = hub_process("up", env={"PROFILERHUB_HUB_WORKERS": "2"})  # uvicorn's supervisor and two workers
    hub = _child(up, " hub")
    servers = hub.children(recursive=True)
    assert len(servers) >= 2, [p.cmdline() for p in servers]
    assert all(p.cmdline() == hub.cmdline() for p in servers)  # forked from the supervisor, not spawned
    hub.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    up.wait_for_output("hub exited with code -9", 60)
    # Before the fix they were orphaned, kept the port, and every restart of the hub failed.
    wait_for(lambda: not any(_alive(p) for p in servers), "the killed hub's server processes ending", 60)
    wait_for(lambda: up.output().count("started hub") == 2, "up restarting the hub", 60)
    restarted = _child(up, " hub")
    assert restarted.pid != hub.pid
    wait_for(up.healthy, "the restarted hub answering /healthz", 180, 0.2)
    recovery = time.monotonic() - killed
    answer = httpx.get(f"{up.url}/api/v1/me", headers=auth(up.admin_token()), timeout=60)
    assert answer.status_code == 200, answer.text
    assert "Address already in use" not in up.output()
    assert up.process.poll() is None  # up goes on (it used to give up, stopping worker, beat and Redis)
    everything = psutil.Process(up.process.pid).children(recursive=True)
    assert up.stop() == 0
    _, alive = psutil.wait_procs(everything, timeout=30)
    assert [p.cmdline() for p in alive if _alive(p)] == []
    print(f"\nup: hub kill -9 with {len(servers)} server processes -> none left, hub answering again "
          f"{recovery:.1f}s later")  # fmt: skip
