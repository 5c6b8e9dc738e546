"""App lifecycle tasks.  Arguments are app ids only; every task is idempotent.

Retries: errors that a later attempt may not meet (database or Redis briefly unreachable) are
retried with exponential backoff and jitter; anything else fails the task (the reconciler
re-sends stuck work).  Periodic tasks (reconcile, poll, cull) are not retried: the next tick is
the retry, and during an outage they count their failures instead of logging each
(``profilerhub_worker.outages``).
"""

from __future__ import annotations

from typing import Any

import redis
from celery import Task, shared_task
from sqlalchemy.exc import OperationalError

from profilerhub_core.tasks import CULL_IDLE_APPS, DELETE_APP, POLL_APPS, RECONCILE_APPS, SPAWN_APP
from profilerhub_worker import lifecycle
from profilerhub_worker.context import WorkerContext
from profilerhub_worker.outages import quiet_in_outages
from profilerhub_worker.runtime import runtime_of

_TRANSIENT = (OperationalError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
_RETRY: dict[str, Any] = {
    "autoretry_for": _TRANSIENT,
    "retry_backoff": 1,
    "retry_backoff_max": 60,
    "retry_jitter": True,
    "max_retries": 8,
}


def _ctx(task: Task) -> WorkerContext:
    return runtime_of(task.app).app_context()


@shared_task(name=SPAWN_APP, bind=True, **_RETRY)
def spawn_app(self: Task, app_id: str) -> str:
    """Pending -> InService | Failed."""
    return lifecycle.spawn(_ctx(self), app_id)


@shared_task(name=DELETE_APP, bind=True, **_RETRY)
def delete_app(self: Task, app_id: str) -> str:
    """Deleting -> Deleted."""
    return lifecycle.delete(_ctx(self), app_id)


@shared_task(name=POLL_APPS, bind=True)
@quiet_in_outages
def poll_apps(self: Task) -> int:
    """Dead InService apps -> Failed (runs every second or so: a killed app is noticed fast)."""
    return lifecycle.poll_running(_ctx(self))


@shared_task(name=RECONCILE_APPS, bind=True)
@quiet_in_outages
def reconcile(self: Task) -> dict[str, int]:
    """Records vs reality: see ``lifecycle.reconcile``."""
    return lifecycle.reconcile(_ctx(self))


@shared_task(name=CULL_IDLE_APPS, bind=True)
@quiet_in_outages
def cull_idle(self: Task) -> int:
    """Idle InService apps -> Deleting."""
    return lifecycle.cull_idle(_ctx(self))
