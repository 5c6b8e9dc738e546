"""Two queues: app lifecycle and webhooks on the app queue, every job task on its ingest queue
(``profilerhub_core.tasks.transport_config``), so a flood of ingest never delays a user's CreateApp."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pytest
import redis

from profilerhub_core.db.models import AppStatus
from profilerhub_core.tasks import (
    CULL_IDLE_APPS,
    DELETE_APP,
    DELIVER_WEBHOOK,
    INGEST_CAPTURES,
    INGEST_JOB,
    INGEST_TRACE,
    LIVE_RULES,
    POLL_APPS,
    RECONCILE_APPS,
    RECONCILE_JOBS,
    SERIES_RETENTION,
    SPAWN_APP,
    SWEEP_STORAGE,
    ingest_queue,
    make_producer,
    queues_of,
)
from tests.support.apps import create, status_of
from tests.support.hub import wait_for

APP_TASKS = [SPAWN_APP, DELETE_APP, RECONCILE_APPS, POLL_APPS, CULL_IDLE_APPS, DELIVER_WEBHOOK]
JOB_TASKS = [
    INGEST_JOB,
    INGEST_TRACE,
    INGEST_CAPTURES,
    RECONCILE_JOBS,
    SWEEP_STORAGE,
    SERIES_RETENTION,
    LIVE_RULES,
]


def queued(client: redis.Redis, queue: str, name: str) -> list[str]:
    """The task names waiting in queue ``name`` of the deployment ``queue`` (its Redis list)."""
    return [json.loads(m)["headers"]["task"] for m in client.lrange(f"{queue}:{name}", 0, -1)]


def test_job_tasks_go_to_the_ingest_queue_and_the_rest_to_the_app_queue(redis_url: str) -> None:
    queue = f"phtest-routes-{uuid.uuid4().hex[:10]}"
    producer = make_producer(redis_url, queue=queue)
    client = redis.Redis.from_url(redis_url)
    try:
        for name in APP_TASKS + JOB_TASKS:
            producer.send_task(name, args=["an-id"])
        assert sorted(queued(client, queue, queue)) == sorted(APP_TASKS)
        assert sorted(queued(client, queue, ingest_queue(queue))) == sorted(JOB_TASKS)
    finally:
        client.delete(f"{queue}:{queue}", f"{queue}:{ingest_queue(queue)}")
        client.close()


def test_a_worker_consumes_the_queues_of_the_kinds_it_is_given() -> None:
    assert queues_of("q") == ["q", "q-ingest"]
    assert queues_of("q", ["ingest"]) == ["q-ingest"] and queues_of("q", ["apps"]) == ["q"]
    with pytest.raises(ValueError, match="unknown queue kind"):
        queues_of("q", ["ingets"])


def test_create_app_is_served_while_the_ingest_queue_is_flooded(
    apps_client: Any,
    apps_settings: Any,
    seed: Any,
    alice: str,
    worker_ctx: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """300 ingest tasks wait on the ingest queue with no ingest worker free (none runs); a real
    worker of the app queue alone spawns Alice's app, and the ingest queue is left as it was."""
    from celery.contrib.testing.worker import start_worker

    from profilerhub_worker.celery_app import make_celery

    queue = apps_settings.celery_queue
    producer = make_producer(apps_settings.redis_url, queue=queue)
    client = redis.Redis.from_url(apps_settings.redis_url)
    for n in range(300):
        producer.send_task(INGEST_JOB, args=[f"flood-{n}"])
    app_id = create(apps_client, alice).json()["app_id"]
    worker_ctx.enqueue = lambda name, *args: producer.send_task(name, args=list(args))
    celery = make_celery(apps_settings.redis_url, queue=queue, context=worker_ctx)
    monkeypatch.setattr(logging.getLogger(), "level", logging.getLogger().level)
    try:
        with start_worker(
            celery,
            pool="solo",
            perform_ping_check=False,
            queues=queues_of(queue, ["apps"]),
            shutdown_timeout=20,
        ):
            producer.send_task(SPAWN_APP, args=[app_id])
            wait_for(lambda: status_of(seed, app_id) is AppStatus.InService, "the app InService", 60)
        assert queued(client, queue, ingest_queue(queue)) == [INGEST_JOB] * 300
    finally:
        client.delete(f"{queue}:{queue}", f"{queue}:{ingest_queue(queue)}")
        client.close()
