"""``/healthz`` (the process answers) and ``/readyz`` (its dependencies answer).

They answer under the API's prefix (``router``: clients that know only the API's base URL; the
documented copy) and at the root (``root_router``: load balancers, kubelets).
"""

from __future__ import annotations

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from profilerhub_core.outage import REDIS, observe
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


def _check_redis(url: str, queue: str) -> tuple[str, str]:
    """The broker's state, and whether a worker has reported in (its heartbeat key is alive)."""
    import redis

    from profilerhub_core.tasks import WORKER_HEARTBEAT_TTL, worker_heartbeat_prefix

    try:
        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        try:
            client.ping()
            beating = next(
                iter(client.scan_iter(match=f"{worker_heartbeat_prefix(queue)}*", count=1000)), None
            )
        finally:
            client.close()
    except Exception as exc:
        observe(REDIS, exc)  # a probe every few seconds: it starts the outage's line, not one per probe
        reason = f"unavailable: {type(exc).__name__}"
        return reason, reason
    REDIS.recovered()
    workers = "ok" if beating is not None else f"none: no worker has reported in {WORKER_HEARTBEAT_TTL} s"
    return "ok", workers


def readyz(request: Request) -> JSONResponse:
    settings = services(request).settings
    checks = {"database": _check_database(request)}
    if settings.redis_url:
        checks["redis"], checks["workers"] = _check_redis(settings.redis_url, settings.celery_queue)
    ready = all(v == "ok" for v in checks.values())
    body = Health(status="ok" if ready else "unavailable", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


for _router in (router, root_router):
    _router.get("/healthz")(healthz)
    _router.get("/readyz", responses={503: {"model": Health}})(readyz)
