"""Fixtures for the app lifecycle tests: settings with a real Redis, an in-process hub whose
task sender is recorded, and a ``WorkerContext`` to run the lifecycle functions directly.

Every app process a test starts is stopped at teardown (found through the spawner's instance
files), so no test leaves one behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from profilerhub_worker import lifecycle
from tests.support.apps import create
from tests.support.hub import SentTasks


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def apps_settings(hub_settings: Any, redis_url: str) -> Any:
    """Hub settings with a real Redis, a queue of this test's own and short timeouts."""
    return hub_settings.model_copy(
        update={
            "redis_url": redis_url,
            "celery_queue": f"phtest-{uuid.uuid4().hex[:10]}",
            "app_start_timeout": 20.0,
            "app_http_timeout": 20.0,
            "app_stop_grace": 2.0,
            "activity_write_seconds": 0.0,
        }
    )


@pytest.fixture
def apps_hub(apps_settings: Any) -> Iterator[Any]:
    from profilerhub_core.db.session import make_engine
    from profilerhub_hub.main import create_app

    engine = make_engine(apps_settings)
    app = create_app(apps_settings, engine=engine)
    app.state.services.app_tasks = SentTasks()
    yield app
    engine.dispose()


@pytest.fixture
def apps_client(apps_hub: Any) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    with TestClient(apps_hub) as test_client:
        yield test_client


@pytest.fixture
def sent(apps_hub: Any) -> SentTasks:
    return apps_hub.state.services.app_tasks  # type: ignore[no-any-return]


@pytest.fixture
def worker_ctx(apps_settings: Any) -> Iterator[Any]:
    """The context a worker builds, for calling ``lifecycle`` functions as plain functions."""
    from profilerhub_core.tasks import make_producer
    from profilerhub_worker.context import build_context

    celery = make_producer(apps_settings.redis_url, queue=apps_settings.celery_queue)
    ctx = build_context(apps_settings, celery)
    ctx.enqueue = RecordedEnqueue()
    yield ctx
    stop_every_instance(ctx.spawner_config)
    ctx.redis.close()
    ctx.sessions.kw["bind"].dispose()


class RecordedEnqueue:
    """Stands in for a worker's ``enqueue(task_name, app_id)``: ``.sent`` lists what was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def __call__(self, name: str, app_id: str) -> None:
        self.sent.append((name, app_id))


def stop_every_instance(config: Any) -> None:
    from profilerhub_worker.spawners import LocalProcessSpawner

    for app_id, state in list(LocalProcessSpawner.list_instances(config)):
        LocalProcessSpawner.found(app_id, config, state).stop()


@pytest.fixture
def alice(seed: Any) -> str:
    return seed.user_token("d1", "alice")  # type: ignore[no-any-return]


@pytest.fixture
def running(apps_client: Any, seed: Any, alice: str, worker_ctx: Any) -> str:
    """Alice's app, spawned and InService; returns its id."""
    app_id = create(apps_client, alice).json()["app_id"]
    assert lifecycle.spawn(worker_ctx, app_id) == "started"
    return app_id  # type: ignore[no-any-return]
