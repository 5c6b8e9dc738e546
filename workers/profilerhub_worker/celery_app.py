"""The Celery application, built by whoever runs it (worker CLI, hub, tests).

``make_celery(broker_url, ...)`` reads no settings at import time.  The worker CLI passes its
settings object as ``context``; tasks find it on ``task.app.profilerhub_context``.  The hub
builds the same app only to send tasks by name, so it never imports the task modules.

Choices: JSON only (a task argument is an id, never a pickled object); ``acks_late`` with
``reject_on_worker_lost`` so a task whose worker is killed runs again on another (tasks are
idempotent, so twice is harmless); a visibility timeout well above the longest task.
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from profilerhub_worker.task_names import (  # noqa: F401  (re-exported)
    APP_QUEUE,
    CULL_IDLE_APPS,
    DELETE_APP,
    POLL_APPS,
    RECONCILE_APPS,
    SPAWN_APP,
)

TASK_MODULES = ["profilerhub_worker.tasks.apps", "profilerhub_worker.tasks.ingest"]


def make_celery(
    broker_url: str,
    *,
    queue: str = APP_QUEUE,
    context: Any = None,
    reconcile_every: float = 15.0,
    poll_every: float = 1.0,
    cull_every: float = 60.0,
    sweep_every: float = 3600.0,
    include_tasks: bool = True,
) -> Celery:
    """A configured Celery app talking to the Redis at ``broker_url``.

    ``queue`` names the queue every app task goes to (tests use a unique one); ``context`` is
    what tasks need to work (settings, database, spawner) and stays in this process.
    """
    app = Celery("profilerhub", broker=broker_url, include=TASK_MODULES if include_tasks else [])
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=queue,
        task_routes={"profilerhub.apps.*": {"queue": queue}},
        broker_transport_options={"visibility_timeout": 600, "global_keyprefix": f"{queue}:"},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        enable_utc=True,
        beat_schedule={
            "reconcile-apps": {
                "task": RECONCILE_APPS,
                "schedule": reconcile_every,
                "options": {"expires": reconcile_every},
            },
            "poll-apps": {"task": POLL_APPS, "schedule": poll_every, "options": {"expires": poll_every}},
            "reconcile-jobs": {"task": "profilerhub.jobs.reconcile", "schedule": reconcile_every},
            "sweep-storage": {
                "task": "profilerhub.jobs.sweep_storage",
                "schedule": sweep_every,
                "options": {"expires": sweep_every},
            },
            "cull-idle-apps": {
                "task": CULL_IDLE_APPS,
                "schedule": cull_every,
                "options": {"expires": cull_every},
            },
        },
    )
    app.profilerhub_context = context
    return app


def send(app: Celery, task_name: str, *args: Any) -> None:
    """Enqueue ``task_name`` with JSON ``args``; call only after the transaction committed."""
    app.send_task(task_name, args=list(args))
