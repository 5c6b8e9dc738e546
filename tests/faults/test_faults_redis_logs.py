"""A Redis outage under hub requests is two lines in the hub's log, whichever parts met it.

A real ``profilerhub hub`` (one process) on a Redis of the test's own: requests that reach Redis
through every part of the hub that uses it (the token cache's shared epoch on every authenticated
request, the rate limiter on failed token checks, the task sender on CreateApp, ``/readyz``) go on
while Redis is killed and restarted. Every part falls back meanwhile (answers stay 2xx/401/503),
and the log has exactly one outage-start and one outage-end line for Redis, the end line counting
the failed calls of all of them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.faults.faults import PrivateRedis, outage_lines
from tests.support.hub import TEST_SECRET_KEY, RunningHub, auth, migrate, wait_for

ADMIN = "redis-logs-admin-token-0123456789abcdef"
ENDED = re.compile(r"hub: Redis answers again after \d+s \((\d+) failed calls?\)")


@pytest.fixture
def redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis.start()
    yield server
    server.stop()


@pytest.fixture
def hub(tmp_path: Path, redis: PrivateRedis, hub_process: Callable[..., RunningHub]) -> RunningHub:
    database = f"sqlite:///{tmp_path / 'hub.db'}"
    migrate(database, tmp_path)
    env = {
        "PROFILERHUB_SECRET_KEY": TEST_SECRET_KEY,
        "PROFILERHUB_ADMIN_TOKEN": ADMIN,
        "PROFILERHUB_REDIS_URL": redis.url,
        "PROFILERHUB_CELERY_QUEUE": f"redis-logs-{uuid.uuid4().hex[:8]}",
        "PROFILERHUB_HUB_WORKERS": "1",  # each process logs its own outage: one process, one pair
        "PROFILERHUB_RATE_LIMIT_TOKEN_FAILURES": "1000",  # counted (in Redis, then in the process), never hit
    }
    return hub_process("hub", database_url=database, env=env)


def _every_part(api: httpx.Client, round_: int) -> None:
    """One request through each part of the hub that reaches Redis; none may answer 500."""
    assert api.get("/api/v1/me").status_code == 200  # the token cache's epoch (read)
    assert api.get("/api/v1/me", headers=auth("phk_guess")).status_code == 401  # the rate limiter
    created = api.post(f"/api/v1/domains/d{round_}/users/alice/apps", json={"app_type": "DetailedProfiler"})
    assert created.status_code == 202, created.text  # the epoch (bump) and the task sender
    assert api.get("/readyz").status_code in (200, 503)  # the readiness probe


def test_a_redis_outage_is_one_start_and_one_end_line_for_every_part_of_the_hub(
    hub: RunningHub, redis: PrivateRedis
) -> None:
    with httpx.Client(base_url=hub.url, headers=auth(ADMIN), timeout=60) as api:
        for round_ in range(3):
            assert api.post("/api/v1/domains", json={"name": f"d{round_}"}).status_code == 201
            assert api.post(f"/api/v1/domains/d{round_}/users", json={"name": "alice"}).status_code == 201
        _every_part(api, 0)
        assert outage_lines(hub.output(), "Redis") == (0, 0)

        redis.kill()
        _every_part(api, 1)
        assert outage_lines(hub.output(), "Redis") == (1, 0), hub.output()[-3000:]

        redis.restart()

        def ended() -> bool:
            return api.get("/api/v1/me").status_code == 200 and outage_lines(hub.output(), "Redis")[1] > 0

        wait_for(ended, "the hub's outage-ended line", 60)
        _every_part(api, 2)

    log = hub.output()
    assert outage_lines(log, "Redis") == (1, 1), log[-3000:]
    assert "Redis failed (" not in log and "Traceback" not in log, log[-3000:]
    (failed,) = (int(count) for count in ENDED.findall(log))
    assert failed >= 5, log[-3000:]  # the epoch read and bump, the limiter, the sender, the probe
    print(f"\nRedis kill -9 under hub requests: 2 outage lines, the end line counting {failed} failed calls")
