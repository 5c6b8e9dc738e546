"""``/healthz`` (the process answers) and ``/readyz`` (its dependencies answer).

They answer under the API's prefix (``router``: clients that know only the API's base URL; the
documented copy) and at the root (``root_router``: load balancers, kubelets).
"""

from __future__ import annotations

from collections import Counter

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from profilerhub_core.outage import REDIS, observe
from profilerhub_core.tasks import (
    QUEUE_KINDS,
    WORKER_HEARTBEAT_TTL,
    heartbeat_queues,
    queues_of,
    worker_heartbeat_prefix,
)
from profilerhub_hub.routes.paths import api_router
from profilerhub_hub.schemas import Health
from profilerhub_hub.services import services

router = api_router(tags=["health"])
root_router = APIRouter(tags=["health"], include_in_schema=False)


async def healthz() -> Health:
    return Health(status="ok")


def _check_database(request: Request) -> str:
    try:
        with services(request).engine.connect() as connection:
            connection.execute(sa.text("SELECT 1"))
        return "ok"
    except Exception as exc:  # any failure means "not ready"; the reason is reported
        return f"unavailable: {type(exc).__name__}"


def _check_redis(url: str, queue: str) -> tuple[str, str, dict[str, str]]:
    """The broker's state, whether a worker has reported in (its heartbeat key is alive), and per
    queue of the deployment (``tasks.queues_of``) whether a live worker consumes it."""
    import redis

    try:
        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        try:
            client.ping()
            keys = list(client.scan_iter(match=f"{worker_heartbeat_prefix(queue)}*", count=1000))
            values = client.mget(keys) if keys else []
        finally:
            client.close()
    except Exception as exc:
        observe(REDIS, exc)  # a probe every few seconds: it starts the outage's line, not one per probe
        reason = f"unavailable: {type(exc).__name__}"
        return reason, reason, {name: reason for name in queues_of(queue)}
    REDIS.recovered()
    live = [v for v in values if v is not None]  # a key that expired between the scan and the read
    workers = "ok" if live else f"none: no worker has reported in {WORKER_HEARTBEAT_TTL} s"
    consumers = Counter(name for value in live for name in set(heartbeat_queues(value, queue)))
    queues = {
        name: f"ok: {consumers[name]} worker{'s' if consumers[name] != 1 else ''}"
        if consumers[name]
        else f"none: no worker consumes it (profilerhub worker --queues {kind})"
        for kind, name in zip(QUEUE_KINDS, queues_of(queue), strict=True)
    }
    return "ok", workers, queues


def readyz(request: Request) -> JSONResponse:
    """Ready when the database answers and, with Redis, the broker answers and a worker has reported
    in. ``queues`` says per Celery queue whether a worker consumes it; it does not decide readiness,
    since an ingest pool scaled to zero while its queue is empty (KEDA's ``minReplicas: 0``) is
    healthy, and the hub still takes uploads, which wait in the queue."""
    settings = services(request).settings
    checks = {"database": _check_database(request)}
    queues: dict[str, str] = {}
    if settings.redis_url:
        checks["redis"], checks["workers"], queues = _check_redis(settings.redis_url, settings.celery_queue)
    ready = all(v == "ok" for v in checks.values())
    body = Health(status="ok" if ready else "unavailable", checks=checks, queues=queues)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


for _router in (router, root_router):
    _router.get("/healthz")(healthz)
    _router.get("/readyz", responses={503: {"model": Health}})(readyz)
