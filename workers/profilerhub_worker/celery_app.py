"""The worker's Celery application, built by whoever runs it (worker CLI, beat, tests).

``make_celery(broker_url, ...)`` reads no settings at import time.  The worker CLI passes its
``WorkerContext`` as ``context``; tasks find it through ``runtime.runtime_of(task.app)``.
The task names, the queue and the transport settings are the hub/worker contract in
:mod:`profilerhub_core.tasks`; the hub sends through ``make_producer`` there, never through this.

Choices on top of the contract: ``acks_late`` with ``reject_on_worker_lost`` so a task whose
worker is killed runs again on another (tasks are idempotent, so twice is harmless).
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from profilerhub_core.tasks import (
    APP_QUEUE,
    CULL_IDLE_APPS,
    LIVE_RULES,
    POLL_APPS,
    RECONCILE_APPS,
    RECONCILE_JOBS,
    SERIES_RETENTION,
    SWEEP_STORAGE,
    transport_config,
)
from profilerhub_worker.runtime import WorkerRuntime, attach

TASK_MODULES = [
    "profilerhub_worker.tasks.apps",
    "profilerhub_worker.tasks.ingest",
    "profilerhub_worker.tasks.webhooks",
]


def make_celery(
    broker_url: str,
    *,
    queue: str = APP_QUEUE,
    context: Any = None,
    reconcile_every: float = 15.0,
    poll_every: float = 1.0,
    cull_every: float = 60.0,
    sweep_every: float = 3600.0,
    rules_every: float = 60.0,
    retention_every: float = 3600.0,
) -> Celery:
    """A configured Celery app talking to the Redis at ``broker_url``.

    ``queue`` names the queue every task goes to (tests use a unique one); ``context`` is
    what tasks need to work (settings, database, spawner) and stays in this process.
    """
    app = Celery("profilerhub", broker=broker_url, include=TASK_MODULES)
    app.conf.update(transport_config(queue))
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_hijack_root_logger=False,
        beat_schedule={
            "reconcile-apps": {
                "task": RECONCILE_APPS,
                "schedule": reconcile_every,
                "options": {"expires": reconcile_every},
            },
            "poll-apps": {"task": POLL_APPS, "schedule": poll_every, "options": {"expires": poll_every}},
            "reconcile-jobs": {"task": RECONCILE_JOBS, "schedule": reconcile_every},
            "live-rules": {
                "task": LIVE_RULES,
                "schedule": rules_every,
                "kwargs": {"scan_interval": rules_every},
                "options": {"expires": rules_every},
            },
            "sweep-storage": {
                "task": SWEEP_STORAGE,
                "schedule": sweep_every,
                "options": {"expires": sweep_every},
            },
            "series-retention": {
                "task": SERIES_RETENTION,
                "schedule": retention_every,
                "options": {"expires": retention_every},
            },
            "cull-idle-apps": {
                "task": CULL_IDLE_APPS,
                "schedule": cull_every,
                "options": {"expires": cull_every},
            },
        },
    )
    attach(app, WorkerRuntime(apps=context))
    return app
