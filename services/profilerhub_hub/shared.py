"""What hub processes share besides the database: one Redis (``PROFILERHUB_REDIS_URL``).

Every hub process (uvicorn workers, replicas on other hosts) that points at the same Redis shares
through it the rate-limit counters (``profilerhub_hub.ratelimit``) and the token cache's epoch
(``profilerhub_hub.tokencache``). Keys live under ``<celery_queue>:hub:``, so installations
sharing one Redis never see each other's.

Redis is a helper here, never the source of truth: when it is unset or unreachable each process
falls back to what it can do alone (its own counters; the cache's time bound). An unreachable
Redis is one outage of the process (``profilerhub_core.outage.REDIS``, which the task sender and
``/readyz`` feed too): one line when it starts, one when it ends with the count of failed calls.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from profilerhub_core.outage import REDIS, observe
from profilerhub_core.settings import Settings

log = logging.getLogger("profilerhub.hub")

TIMEOUT_SECONDS = 0.5  # a slow Redis must not hold a request up for long: fall back instead


def shared_redis(settings: Settings) -> Any | None:
    """A Redis client for ``settings.redis_url`` (connecting lazily), or None when unset."""
    if not settings.redis_url:
        return None
    import redis

    return redis.Redis.from_url(
        settings.redis_url,
        socket_timeout=TIMEOUT_SECONDS,
        socket_connect_timeout=TIMEOUT_SECONDS,
        health_check_interval=30,
    )


def shared_key(settings: Settings, *parts: str) -> str:
    return ":".join((settings.celery_queue, "hub", *parts))


class Fallback:
    """One use of the shared Redis that falls back when a call fails. ``note(exc)`` after a failed
    call: Redis unreachable counts against the process's Redis outage; any other error (a Redis
    that answers, but wrongly) is logged at most once a minute per use. ``answered()`` after a
    call that succeeded: it ends an outage."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._last = float("-inf")

    def note(self, exc: Exception) -> None:
        if observe(REDIS, exc):
            return
        now = time.monotonic()
        if now - self._last >= 60:
            self._last = now
            log.warning("Redis failed (%s: %s): %s", type(exc).__name__, exc, self.what)

    @staticmethod
    def answered() -> None:
        REDIS.recovered()


__all__ = ["Fallback", "shared_key", "shared_redis"]
