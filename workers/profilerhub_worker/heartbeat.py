"""The worker's heartbeat: a Redis key that says "a worker is taking tasks from these queues".

``/readyz`` answers 503 when no worker's key is alive, so a load balancer or an operator sees a
stack whose worker died (or never started) instead of a hub that accepts work nobody will do; the
key's value names the queues the worker consumes, so ``/readyz`` also says per queue whether any
worker takes it ("no ingest worker").
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

import redis

from profilerhub_core.outage import REDIS
from profilerhub_core.tasks import (
    WORKER_HEARTBEAT_SECONDS,
    WORKER_HEARTBEAT_TTL,
    heartbeat_value,
    worker_heartbeat_prefix,
)

log = logging.getLogger("profilerhub.worker")


def start_heartbeat(redis_url: str, queue: str, hostname: str, consumed: list[str]) -> Callable[[], None]:
    """Refresh this worker's key (holding the ``consumed`` queues' names) every few seconds in a
    daemon thread; call the returned function to stop (the key is then removed). A Redis outage is
    skipped over: the key expires, and comes back; its start and end are one log line each
    (``profilerhub_core.outage``), the worker's only word on it."""
    stop = threading.Event()
    key = worker_heartbeat_prefix(queue) + hostname
    value = heartbeat_value(consumed)

    def beat() -> None:
        client = redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5)
        try:
            while True:
                try:
                    client.set(key, value, ex=WORKER_HEARTBEAT_TTL)
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

    thread = threading.Thread(target=beat, name="profilerhub-heartbeat", daemon=True)
    thread.start()

    def stopped() -> None:
        """Stop beating and wait (a few seconds at most) for the key to be removed, so a worker
        stopped is gone from ``/readyz`` at once rather than when its key expires."""
        stop.set()
        thread.join(timeout=WORKER_HEARTBEAT_SECONDS)

    return stopped


__all__ = ["start_heartbeat"]
