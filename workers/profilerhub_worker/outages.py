"""Periodic work during an outage: one line when the database, Redis or storage stops answering and
one when it answers again (``profilerhub_core.outage``), instead of a traceback per tick.

    @shared_task(name=POLL_APPS, bind=True)
    @quiet_in_outages
    def poll_apps(self): ...            # returns None while the database is down

    celery beat --scheduler profilerhub_worker.outages:OutageAwareScheduler

Beat's own scheduler logs a traceback for every task it cannot send (a dozen a second while Redis
is down); ``OutageAwareScheduler`` counts them instead.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from celery.beat import PersistentScheduler

from profilerhub_core.outage import REDIS, STORAGE, observe, outage_of, report

log = logging.getLogger("profilerhub.beat")
T = TypeVar("T")


def quiet_in_outages(task: Callable[..., T]) -> Callable[..., T | None]:
    """Wrap a periodic task: an outage error is counted (and the task returns None: the next tick
    is the retry); any other error raises as before. A run that succeeds ends a Redis outage (its
    message came through Redis) and a storage one."""

    @functools.wraps(task)
    def run(*args: Any, **kwargs: Any) -> T | None:
        try:
            result = task(*args, **kwargs)
        except Exception as exc:
            if not report(exc):
                raise
            return None
        REDIS.recovered()
        STORAGE.recovered()
        return result

    return run


class OutageAwareScheduler(PersistentScheduler):
    """Celery beat's scheduler, logging a broker outage as two lines instead of a traceback per send."""

    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        try:
            self.apply_async(entry, producer=producer, advance=False)
        except Exception as exc:  # beat's own apply_entry logs and carries on, whatever it was
            cause = exc.__cause__ or exc.__context__ or exc  # apply_async wraps it in SchedulingError
            if not observe(REDIS, cause):
                log.error("could not send the scheduled task %s: %s", entry.name, exc, exc_info=True)
        else:
            REDIS.recovered()


__all__ = ["STORAGE", "OutageAwareScheduler", "outage_of", "quiet_in_outages", "report"]
