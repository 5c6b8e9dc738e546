"""The worker's heartbeat: a Redis key that says "a worker is taking tasks from this queue".

``/readyz`` answers 503 when no worker's key is alive, so a load balancer or an operator sees a
stack whose worker died (or never started) instead of a hub that accepts work nobody will do.
"""

from __future__ import annotations

import contextlib
import logging
import threading

import redis

from profilerhub_core.outage import REDIS
from profilerhub_core.tasks import WORKER_HEARTBEAT_SECONDS, WORKER_HEARTBEAT_TTL, worker_heartbeat_prefix

log = logging.getLogger("profilerhub.worker")


def start_heartbeat(redis_url: str, queue: str, hostname: str) -> threading.Event:
    """Refresh this worker's key every few seconds in a daemon thread; set the returned event to stop
        (the key is then removed). A Redis outage is skipped over: the key expires, and comes back; its
    start and end are one log line each (``profilerhub_core.outage``), the worker's only word on it."""
    stop = threading.Event()
    key = worker_heartbeat_prefix(queue) + hostname

    def beat() -> None:
        client = redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5)
        try:
            while True:
                try:
                    client.set(key, "1", ex=WORKER_HEARTBEAT_TTL)
                except redis.RedisError as exc:  # the key expires, and comes back with Redis
                    REDIS.failed(exc)
                else:
                    REDIS.recovered()
                if stop.wait(WORKER_HEARTBEAT_SECONDS):
                    break
            with contextlib.suppress(redis.RedisError):
                client.delete(key)
        finally:
            client.close()

    threading.Thread(target=beat, name="profilerhub-heartbeat", daemon=True).start()
    return stop


__all__ = ["start_heartbeat"]
