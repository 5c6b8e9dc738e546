"""What ``profilerhub up`` asks of the worker when it exits: leave no app process behind.

On exit ``up`` leaves no process behind, app processes included: each InService app's process is
stopped and the app is marked *suspended* (it stays InService, with the same id and URL).  The
next ``up`` starts its worker, whose first reconcile restarts every suspended app.  (A worker or
hub restart in production does not touch apps: they run on, and the new processes find them.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from profilerhub_core.settings import Settings


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
