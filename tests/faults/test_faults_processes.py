"""Processes killed under a running stack: a real hub, Celery worker and beat on a Redis of the
module's own (so a test can kill it), real app processes, SQLite.

    app process kill -9       -> Failed with a reason; opening it answers 503 in the error shape
    worker kill -9 mid-ingest -> the job taken over at the next reconcile, not an attempt; Ready
    Redis kill -9 mid-task    -> the worker exits 70; an app created meanwhile starts once Redis is
                                 back, however long it was down; beat and hub log two lines each
    Redis kill -9, worker idle -> the worker retries the broker, stays up and runs a task sent after
                                 Redis is back

Each test ends with nothing stuck (``assert_settled``) and prints what it saw and how long the
recovery took (a figure, not a bound). The tests share one stack; the Redis ones run last.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from profilerhub_core.tasks import queues_of
from tests.e2e.apps_stack import AppStack, build_stack, pid_alive
from tests.faults.faults import PrivateRedis, assert_error_shape, assert_settled, outage_lines
from tests.support.hub import auth, wait_for

TRACE = "torch-cpu/mlp_cpu_10steps.pt.trace.json"
JOBS = "/api/v1/domains/{domain}/users/{user}/jobs"


@pytest.fixture(scope="module")
def redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, redis: PrivateRedis) -> Iterator[AppStack]:
    running = build_stack(
        tmp_path_factory.mktemp("faults"),
        redis.url,
        # A dead ingest is seen within 15 s. A large file's parse, which holds the GIL for seconds,
        # keeps its claim live by itself (profilerhub_worker.ingest.claim.Heartbeat.parsing).
        PROFILERHUB_JOB_INGEST_HEARTBEAT_SECONDS="5",
        # One hub process: each process logs its own outage's start and end, and with several the
        # request that ends it may land on a process that never saw it start.
        PROFILERHUB_HUB_WORKERS="1",
    )
    yield running
    running.stop()
    assert_settled(running.env["PROFILERHUB_DATABASE_URL"])


def _db(stack: AppStack) -> sqlite3.Connection:
    return sqlite3.connect(stack.env["PROFILERHUB_DATABASE_URL"].removeprefix("sqlite:///"), timeout=30)


def _row(stack: AppStack, sql: str, *args: Any) -> Any:
    with _db(stack) as db:
        return db.execute(sql, args).fetchone()


def _big_trace(shared_dir: Path, copies: int = 20) -> bytes:
    """The real CPU trace repeated ``copies`` times along the time axis: an ingest of a few seconds."""
    trace = json.loads((shared_dir / "traces" / TRACE).read_text())
    events = trace["traceEvents"]
    span = max(float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in events) + 1000
    tiled = []
    for i in range(copies):
        for event in events:
            copy = dict(event)
            if "ts" in copy:
                copy["ts"] = float(copy["ts"]) + i * span
            tiled.append(copy)
    return gzip.compress(json.dumps({**trace, "traceEvents": tiled}).encode(), 1)


def test_killed_app_is_failed_and_its_owner_gets_a_clear_answer(stack: AppStack) -> None:
    alice = stack.user_token("appkill", "alice")
    app_id = stack.running_app(alice, "appkill", "alice", timeout=180)
    pid = stack.instance(app_id)["pid"]
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    answers: list[httpx.Response] = []

    def failed() -> bool:
        answers.append(stack.open(alice, app_id))
        return stack.describe(alice, "appkill", "alice")["status"] == "Failed"

    wait_for(failed, "the killed app Failed", 120, 0.2)
    noticed = time.monotonic() - killed
    assert "unexpectedly" in stack.describe(alice, "appkill", "alice")["failure_reason"]
    for answer in answers:  # meanwhile: a 200 from nobody, or a clear 502/503, never a hang or a 500
        assert answer.status_code != 200
        if answer.status_code != 502:
            assert_error_shape(answer, 503)
    closed = assert_error_shape(stack.open(alice, app_id), 503)
    assert "Failed" in closed["message"] or "not running" in closed["message"].lower(), closed
    assert stack.delete(alice, "appkill", "alice").status_code == 202
    stack.wait_status(alice, "appkill", "alice", "Deleted", timeout=120)
    assert not pid_alive(pid)
    print(f"\napp kill -9: Failed after {noticed:.1f}s; {len(answers)} opens meanwhile, none 200/500")


def test_worker_killed_mid_ingest_is_taken_over_without_spending_an_attempt(
    stack: AppStack, shared_dir: Path
) -> None:
    from profilerhub_worker.ingest.limits import COPY_PREFIX

    alice = stack.user_token("ingest", "alice")
    jobs = stack.url + JOBS.format(domain="ingest", user="alice")
    with httpx.Client(headers=auth(alice), timeout=120) as client:
        created = client.post(jobs, json={"name": "killed-mid-ingest"})
        assert created.status_code == 201, created.text
        job_id = created.json()["job_id"]
        files = {
            "job.json": json.dumps({"format": "profilerhub-raw/1", "job": "killed-mid-ingest"}).encode(),
            "traces/rank0.pt.trace.json.gz": _big_trace(shared_dir),
        }
        for name, body in files.items():
            assert client.put(f"{jobs}/{job_id}/files/{name}", content=body).status_code == 201
        assert client.post(f"{jobs}/{job_id}/complete").status_code == 202

    assert stack.worker is not None
    victim = stack.worker
    status = ""

    def processing() -> bool:
        nonlocal status
        status = _row(stack, "SELECT status FROM jobs WHERE id = ?", job_id)[0]
        return status != "InProgress"

    wait_for(processing, "the worker claiming the job", 180, 0.01)
    victim.send_signal(signal.SIGSTOP)  # frozen where it is, then killed: no cleanup at all
    assert _row(stack, "SELECT status FROM jobs WHERE id = ?", job_id)[0] == "Processing", status
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    killed = time.monotonic()
    stack.start_worker()
    wait_for(
        lambda: _row(stack, "SELECT status FROM jobs WHERE id = ?", job_id)[0] in ("Ready", "Failed"),
        "the job finished by the new worker",
        300,
        0.2,
    )
    recovered = time.monotonic() - killed
    status, reason, attempts, takeovers = _row(
        stack,
        "SELECT status, failure_reason, ingest_attempts, ingest_takeovers FROM jobs WHERE id = ?",
        job_id,
    )
    assert (status, reason, attempts, takeovers) == ("Ready", None, 1, 1)
    left = list(Path(os.environ.get("TMPDIR", "/tmp")).glob(f"{COPY_PREFIX}{victim.pid}-*"))
    assert left == []  # the killed ingest's temporary copies were removed
    print(f"\nworker kill -9 mid-ingest: Ready {recovered:.1f}s after the kill; attempts 1, takeovers 1")


def test_redis_killed_under_a_running_task(stack: AppStack, redis: PrivateRedis) -> None:
    assert stack.worker is not None and stack.beat is not None
    stack.worker.terminate()  # a worker whose spawns take a while: Redis dies while one runs
    stack.worker.wait(60)
    gates = stack.home.parent / "spawn-gates"  # the spawn holds until the test opens its gate
    gates.mkdir()
    stack.start_worker(
        PROFILERHUB_SPAWNER="profilerhub_worker.spawners.fakes:SlowSpawn",
        PROFILERHUB_TEST_SLOW_SPAWN_SECONDS="120",  # the window, at most
        PROFILERHUB_TEST_SPAWN_GATE=str(gates),
    )
    alice = stack.user_token("redis", "alice")
    bob = stack.user_token("redis", "bob")
    app_id = stack.create(alice, "redis", "alice").json()["app_id"]

    def spawning() -> bool:
        try:
            return bool(stack.instance(app_id).get("port"))
        except (OSError, ValueError):
            return False

    wait_for(spawning, "alice's app process started by the slow spawn", 180, 0.1)
    worker = stack.worker
    redis.kill()
    down = time.monotonic()

    def log_of(prefix: str) -> str:
        paths = sorted(stack.home.parent.glob(f"{prefix}-*.log"))
        return "\n".join(p.read_text(errors="replace") for p in paths)

    def noticed() -> bool:
        return worker.poll() is not None or "Connection to broker lost" in log_of("worker")

    wait_for(noticed, "the worker noticing its broker gone mid-spawn", 180, 0.1)
    (gates / app_id).touch()  # alice's spawn ends while Redis is gone

    def crashed_or_retrying() -> bool:
        return worker.poll() is not None or "consumer: Cannot connect to redis" in log_of("worker")

    # Celery either stops on kombu's "Unrecoverable error" (the task ended while Redis was gone:
    # then the worker must exit 70, never 0) or keeps retrying the broker (and must resume).
    wait_for(crashed_or_retrying, "the worker crashing or retrying the broker", 180, 0.1)
    code = worker.poll()
    if code is not None:
        assert code == 70, f"the worker exited with {code}, not 70"
        assert "worker: stopped on an unrecoverable error" in log_of("worker")

    queued = stack.create(bob, "redis", "bob")  # accepted while the queue is down
    assert queued.status_code == 202 and queued.json()["status"] == "Pending", queued.text
    (gates / queued.json()["app_id"]).touch()  # bob's spawn, by this worker if it still runs, need not hold
    with _db(stack) as db:  # as if Redis stayed down an hour, far past the start timeout
        db.execute(
            "UPDATE apps SET status_changed_at = datetime(status_changed_at, '-1 hour') WHERE id = ?",
            (queued.json()["app_id"],),
        )
    # Redis stays down until beat has failed a send (its outage-started line, asserted below); an
    # outage shorter than that may fall between two of its sends.
    wait_for(lambda: outage_lines(log_of("beat"), "Redis")[0] == 1, "beat's outage-started line", 120)
    redis.restart()
    if code is not None:
        stack.start_worker()
    stack.wait_status(alice, "redis", "alice", "InService", timeout=180)
    stack.wait_status(bob, "redis", "bob", "InService", timeout=180)
    recovered = time.monotonic() - down
    assert stack.delete(bob, "redis", "bob").status_code == 202  # the hub's next send ends its outage
    stack.wait_status(bob, "redis", "bob", "Deleted", timeout=120)

    wait_for(lambda: outage_lines(log_of("beat"), "Redis") == (1, 1), "beat's outage-ended line", 120)
    beat, hub = log_of("beat"), log_of("hub")
    assert outage_lines(beat, "Redis") == (1, 1) and "Traceback" not in beat, beat[-3000:]
    assert outage_lines(hub, "Redis") == (1, 1), hub[-3000:]
    outcome = f"exited {code}" if code is not None else "retried the broker and resumed"
    print(f"\nRedis kill -9 mid-spawn: the worker {outcome}; apps InService {recovered:.1f}s after the kill")


def test_an_idle_worker_whose_redis_restarts_resumes_consuming(stack: AppStack, redis: PrivateRedis) -> None:
    import redis as redis_py

    assert stack.worker is not None and stack.beat is not None
    stack.worker.terminate()  # whatever the test before left: a worker with the real spawner
    stack.worker.wait(60)
    stack.start_worker()
    worker, log = stack.worker, stack.home.parent / f"worker-{len(stack.processes) - 1}.log"
    assert worker is not None
    carol = stack.user_token("idle", "carol")
    stack.running_app(carol, "idle", "carol", timeout=180)  # it consumes
    stack.beat.send_signal(signal.SIGSTOP)  # no periodic sends: once the queue drains, it is idle
    try:
        queue = stack.env["PROFILERHUB_CELERY_QUEUE"]
        client = redis_py.Redis.from_url(redis.url)

        def idle() -> bool:  # nothing queued (app or ingest queue), nothing delivered and unacknowledged
            waiting = sum(client.llen(f"{queue}:{name}") for name in queues_of(queue))
            return waiting == 0 and client.hlen(f"{queue}:unacked") == 0

        wait_for(idle, "the worker idle with an empty queue", 120, 0.1)
        client.close()
        redis.kill()

        def retrying() -> bool:
            return worker.poll() is not None or "Cannot connect to redis" in log.read_text(errors="replace")

        wait_for(retrying, "the worker retrying its broker", 180, 0.1)
        assert worker.poll() is None, f"the idle worker exited with {worker.returncode} when Redis went away"
        redis.restart()
        dave = stack.user_token("idle", "dave")
        stack.running_app(dave, "idle", "dave", timeout=180)  # sent after the restart: it ran
    finally:
        stack.beat.send_signal(signal.SIGCONT)
    text = log.read_text(errors="replace")
    assert worker.poll() is None and "Unrecoverable" not in text, text[-3000:]
    started, ended = outage_lines(text, "Redis")  # (0, 0) when no heartbeat fell in the outage
    assert started == ended <= 1, text[-3000:]
    for user, token in (("carol", carol), ("dave", dave)):
        assert stack.delete(token, "idle", user).status_code == 202
        stack.wait_status(token, "idle", user, "Deleted", timeout=120)
    print("\nRedis kill -9 under an idle worker: it retried the broker, stayed up and ran a task sent after")
