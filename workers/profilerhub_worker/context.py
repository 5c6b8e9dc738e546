"""Build a worker's ``WorkerContext`` (database, Redis, spawner, app environment) from settings."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import redis

from profilerhub_core.apptokens import hub_signing_key, public_key_pem
from profilerhub_core.db.session import make_engine, session_factory
from profilerhub_worker.lifecycle import WorkerContext
from profilerhub_worker.runtime import runtime_of
from profilerhub_worker.spawners import SpawnerConfig

if TYPE_CHECKING:
    from celery import Celery

    from profilerhub_core.settings import Settings


# S3 credentials an app needs to read its owner's jobs (boto3's usual variables).
STORAGE_CREDENTIALS_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
)


def spawner_config(settings: Settings) -> SpawnerConfig:
    return SpawnerConfig(
        home=settings.home,
        start_timeout=settings.app_start_timeout,
        http_timeout=settings.app_http_timeout,
        stop_grace=settings.app_stop_grace,
        options={name: value for name, value in settings.model_dump().items() if name.startswith("k8s_")},
    )


def build_context(settings: Settings, celery: Celery) -> WorkerContext:
    """What the app tasks of this worker process work with."""
    if not settings.redis_url:
        raise ValueError("PROFILERHUB_REDIS_URL is not set")
    engine = make_engine(settings)
    app_env = {
        "PROFILERHUB_APP_PUBLIC_KEY": public_key_pem(hub_signing_key(settings)),
        "PROFILERHUB_APP_HUB_URL": settings.public_url,
        "PROFILERHUB_APP_HUB_API_URL": settings.hub_internal_url or settings.public_url,
        "PROFILERHUB_APP_STORAGE_URL": settings.storage_url,  # the app reads its owner's jobs (issue 5)
        "PROFILERHUB_APP_S3_ENDPOINT_URL": settings.s3_endpoint_url or "",
        **{k: os.environ[k] for k in STORAGE_CREDENTIALS_ENV if k in os.environ},
    }
    return WorkerContext(
        sessions=session_factory(engine),
        redis=redis.Redis.from_url(settings.redis_url),
        spawner=settings.spawner,
        spawner_config=spawner_config(settings),
        app_env=app_env,
        enqueue=lambda name, app_id: celery.send_task(name, args=[app_id]),
        resend_after=settings.app_resend_seconds,
        key_prefix=settings.celery_queue,
    )


def worker_celery(settings: Settings, *, with_context: bool = True) -> Celery:
    """The Celery app a worker (or beat) process runs, with its context attached."""
    from profilerhub_worker.celery_app import make_celery

    if not settings.redis_url:
        raise ValueError("PROFILERHUB_REDIS_URL is not set")
    celery = make_celery(
        settings.redis_url,
        queue=settings.celery_queue,
        reconcile_every=settings.reconcile_seconds,
        poll_every=settings.app_poll_seconds,
        cull_every=settings.cull_seconds,
        sweep_every=settings.storage_sweep_seconds,
        rules_every=settings.rules_scan_interval_seconds,
        retention_every=settings.series_retention_seconds,
    )
    runtime = runtime_of(celery)
    runtime.settings = settings  # for the ingest tasks
    if with_context:
        runtime.apps = build_context(settings, celery)
    return celery
