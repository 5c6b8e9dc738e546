"""``/readyz`` says per Celery queue whether a worker consumes it, from real ``profilerhub worker``
processes started on one queue each (``--queues apps``, ``--queues ingest``) beside a real hub."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.jobs_stack import JobStack, _stop
from tests.support.hub import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def stack(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[JobStack]:
    started = JobStack.start(tmp_path_factory.mktemp("readyz"), redis_url)
    _stop(started.worker)  # the stack's worker of both queues: each test starts its own
    started.worker = None
    yield started
    started.stop()


def _ready(stack: JobStack) -> Any:
    return httpx.get(f"{stack.url}/readyz", timeout=10)


def test_readyz_names_the_queue_no_worker_consumes(stack: JobStack) -> None:
    queue = stack.env["PROFILERHUB_CELERY_QUEUE"]
    apps, ingest = queue, f"{queue}-ingest"
    wait_for(lambda: _ready(stack).json()["checks"]["workers"] != "ok", "the stack's own worker gone", 40)
    stack.worker = stack._spawn("worker", "--queues", "apps", "--concurrency", "1")
    wait_for(
        lambda: _ready(stack).status_code == 200, lambda: f"an apps worker reporting in\n{stack.output()}", 90
    )
    answer = _ready(stack).json()
    assert answer["queues"] == {
        apps: "ok: 1 worker",
        ingest: "none: no worker consumes it (profilerhub worker --queues ingest)",
    }, answer
    assert answer["status"] == "ok"  # an ingest pool scaled to zero is not a hub that is down

    ingest_worker = stack._spawn("worker", "--queues", "ingest", "--concurrency", "1")
    try:
        wait_for(
            lambda: _ready(stack).json()["queues"][ingest] == "ok: 1 worker",
            lambda: f"the ingest worker reporting in\n{stack.output()}",
            90,
        )
        _stop(stack.worker)  # the apps worker stops: it is gone at once, not when its key expires
        stack.worker = None
        assert _ready(stack).json()["queues"] == {
            apps: "none: no worker consumes it (profilerhub worker --queues apps)",
            ingest: "ok: 1 worker",
        }
    finally:
        # stopped, not killed: a killed worker's key is left to expire (30 s), which is not what
        # is tested here; a loaded machine may take a while over a warm shutdown
        _stop(ingest_worker, grace=120)
    assert ingest_worker.returncode == 0, f"the ingest worker did not stop cleanly\n{stack.output()}"
    gone = _ready(stack)
    assert gone.status_code == 503 and gone.json()["checks"]["workers"].startswith("none"), gone.json()
