"""Sending tasks to the workers from the hub, by the names in ``profilerhub_core.tasks``.

A request commits the app row first and enqueues after; if Redis is down the request still
succeeds, and the reconciler re-sends the work from the database.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from profilerhub_core.outage import REDIS, observe
from profilerhub_core.settings import Settings

log = logging.getLogger("profilerhub.hub")


class TaskSender:
    """``send(task_name, app_id)``, building the Celery producer on first use."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._celery: Any = None
        self._lock = threading.Lock()

    def _app(self) -> Any:
        with self._lock:
            if self._celery is None:
                from profilerhub_core.tasks import make_producer

                assert self._settings.redis_url
                self._celery = make_producer(self._settings.redis_url, queue=self._settings.celery_queue)
            return self._celery

    def send(self, task_name: str, app_id: str) -> None:
        if not self._settings.redis_url:
            log.warning(
                "no PROFILERHUB_REDIS_URL: %s for app %s waits for a worker's reconciler", task_name, app_id
            )
            return
        try:
            self._app().send_task(
                task_name,
                args=[app_id],
                retry=True,
                retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.2},
            )
        except Exception as exc:  # the row is committed; the reconciler re-sends it
            outage = observe(REDIS, exc)  # one line per outage, not one per request
            log.log(
                logging.DEBUG if outage else logging.WARNING,
                "could not enqueue %s for app %s (%s); the reconciler will",
                task_name, app_id, exc,
            )  # fmt: skip
        else:
            REDIS.recovered()


__all__ = ["TaskSender"]
