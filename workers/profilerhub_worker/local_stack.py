"""What ``profilerhub up`` adds for apps: an embedded Redis, and a clean exit.

On exit ``up`` leaves no process behind, app processes included: each InService app's process is
stopped and the app is marked *suspended* (it stays InService, with the same id and URL).  The
next ``up`` starts its worker, whose first reconcile restarts every suspended app.  (A worker or
hub restart in production does not touch apps: they run on, and the new processes find them.)
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from profilerhub_core.settings import Settings
    from profilerhub_worker.embedded_redis import EmbeddedRedis

log = logging.getLogger(__name__)


@contextmanager
def apps_stack(settings: Settings, env: dict[str, str]) -> Iterator[tuple[Settings, EmbeddedRedis | None]]:
    """Start an embedded Redis unless ``settings.redis_url`` is set (its URL goes into ``env``);
    on exit suspend the local apps, then stop Redis.  Yields the settings with the Redis URL, and
    the embedded Redis (None when one was configured) for ``up`` to watch."""
    from profilerhub_worker.embedded_redis import EmbeddedRedis

    embedded = None
    if not settings.redis_url:
        embedded = EmbeddedRedis(settings.home / "redis")
        env["PROFILERHUB_REDIS_URL"] = embedded.start()
        settings = settings.model_copy(update={"redis_url": env["PROFILERHUB_REDIS_URL"]})
    try:
        yield settings, embedded
    finally:
        try:
            suspended = suspend_local_apps(settings)
            if suspended:
                log.warning("stopped %d app process(es); the next `profilerhub up` restarts them", suspended)
        finally:
            if embedded is not None:
                embedded.stop()


def suspend_local_apps(settings: Settings) -> int:
    """Stop every InService app's process, keeping the apps InService to be restarted later."""
    from profilerhub_core.tasks import make_producer
    from profilerhub_worker.context import build_context
    from profilerhub_worker.lifecycle import suspend_all
    from profilerhub_worker.spawners import spawner_class

    if spawner_class(settings.spawner).kind != "local":  # by kind: a local spawner's subclass too
        return 0  # other backends (Kubernetes) keep running without `up`

    assert settings.redis_url
    ctx = build_context(settings, make_producer(settings.redis_url, queue=settings.celery_queue))
    try:
        return suspend_all(ctx)
    finally:
        ctx.redis.close()
        ctx.sessions.kw["bind"].dispose()
