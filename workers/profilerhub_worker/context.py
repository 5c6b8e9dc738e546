"""A worker's ``WorkerContext`` (database, Redis, spawner, app environment), and how it is built
from settings (``build_context``), once per worker process."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import redis
from sqlalchemy.orm import Session, sessionmaker

from profilerhub_core.apptokens import hub_signing_key, public_key_pem
from profilerhub_core.db.session import make_engine, session_factory
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


@dataclass
class WorkerContext:
    """Everything the lifecycle functions need; built once per worker process."""

    sessions: sessionmaker[Session]
    redis: redis.Redis
    spawner: str
    spawner_config: SpawnerConfig
    app_env: dict[str, str]
    """Environment every app gets: the hub's public key and URL."""
    enqueue: Callable[[str, str], None]
    """``enqueue(task_name, app_id)``: send a task (the reconciler re-sends stuck work)."""
    resend_after: float = 10.0
    """Seconds a Pending/Deleting app may wait, unclaimed, before the reconciler re-sends its task."""
    lock_seconds: float = 10.0
    """Lifetime of an app's lock; the holder renews it, so a killed worker's lock lapses this fast."""
    key_prefix: str = "profilerhub"

    @property
    def pending_timeout(self) -> float:
        """A Pending app older than this failed to start, whatever the reason."""
        cfg = self.spawner_config
        return 2 * (cfg.start_timeout + cfg.http_timeout + cfg.stop_grace) + self.resend_after


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
