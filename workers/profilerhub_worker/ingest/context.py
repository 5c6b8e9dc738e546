"""What ingest works with: ``IngestContext`` (one per worker process) and its two exceptions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from profilerhub_core.retention import SeriesRetention
from profilerhub_core.storage import ObjectStore
from profilerhub_worker.ingest.limits import (
    NO_LIMIT,
    SLOWEST_PARSE_BYTES_PER_SECOND,
    MemoryBudget,
    default_memory_budget,
    remove_stale_copies,
)
from profilerhub_worker.ingest.memory import DEFAULT_TRACE_MEMORY


@dataclass(frozen=True)
class WebhookPolicy:
    """How deliveries are made (the ``webhook_*`` settings)."""

    allowed_networks: tuple[str, ...] = ()
    timeout_s: float = 10.0
    max_attempts: int = 6
    backoff_s: float = 10.0
    transport: Any = None
    """An ``httpx`` transport seam for tests; None: the network."""


@dataclass
class IngestContext:
    """What ingest needs: the database, the object store and the limits. One per worker process."""

    sessions: sessionmaker[Session]
    store: ObjectStore
    max_file_bytes: int
    """Largest stored (compressed) raw file."""
    max_trace_bytes: int
    """Largest raw file once decompressed (``limits.NO_LIMIT``: none)."""
    stale_after: timedelta
    max_attempts: int = 3
    heartbeat_every: timedelta = timedelta(seconds=10)
    """How often a running ingest refreshes its claim's heartbeat."""
    heartbeat_stale: timedelta = timedelta(seconds=30)
    """A claim with no heartbeat for this long is its dead worker's: the next reconcile re-sends it."""
    slowest_parse_bytes_per_second: float = SLOWEST_PARSE_BYTES_PER_SECOND
    """The slowest a file's parse is assumed to go: a claim stays live this long per byte while a
    large file is parsed (``claim.Heartbeat.parsing``)."""
    max_takeovers: int = 10
    """Takeovers from dead workers (``Job.ingest_takeovers``) before the job is Failed."""
    resend_after: timedelta = timedelta(seconds=30)
    enqueue: Callable[..., None] | None = None
    """``enqueue(task_name, *args)``; what the reconciler re-sends stuck jobs with (``job_id``) and
    a fanned-out ingest sends its traces' tasks with."""
    leases: Any = None
    """A Redis client for the traces' leases (``fanout``); None: a job's traces are read one after
    another by the task holding its claim."""
    traces_per_job: int = 16
    """Traces of one job parsed at once when it fans out (``fanout.join_traces``' window)."""
    jobs_per_user: int = 0
    """Jobs of one user claimed at once (``claim.UserAtLimit``); 0: no limit."""
    max_ingest_bytes: int = NO_LIMIT
    """Largest total of one job's raw files once decompressed."""
    max_inflate_ratio: float = 200.0
    """Decompression-bomb guard (``limits.inflate_to_file``); 0: off."""
    memory: MemoryBudget = field(default_factory=lambda: MemoryBudget(default_memory_budget()))
    """The worker-wide budget concurrent ingests parse under (``limits``)."""
    trace_memory: int = DEFAULT_TRACE_MEMORY
    """What one trace's ingest may hold (RSS; ``memory``): what it reserves of ``memory`` at most."""
    webhooks: WebhookPolicy = field(default_factory=WebhookPolicy)
    series_retention: SeriesRetention = field(default_factory=SeriesRetention)
    """How long Ready jobs' series are kept, at which resolution (``retention``)."""

    @classmethod
    def from_settings(
        cls, settings: Any, store: ObjectStore, enqueue: Callable[..., None] | None = None
    ) -> IngestContext:
        from profilerhub_core.db.session import make_engine, session_factory

        remove_stale_copies()  # what an ingest killed mid-way left in the temporary directory
        return cls(
            sessions=session_factory(make_engine(settings)),
            store=store,
            max_file_bytes=settings.job_max_file_bytes,
            max_trace_bytes=settings.job_max_trace_bytes or NO_LIMIT,
            max_ingest_bytes=settings.job_max_ingest_bytes or NO_LIMIT,
            max_inflate_ratio=settings.job_max_inflate_ratio,
            memory=MemoryBudget(settings.worker_ingest_memory_bytes or default_memory_budget()),
            trace_memory=settings.job_ingest_trace_memory_bytes,
            stale_after=timedelta(seconds=settings.job_ingest_timeout_seconds),
            max_attempts=settings.job_ingest_max_attempts,
            heartbeat_every=timedelta(seconds=settings.job_ingest_heartbeat_seconds),
            heartbeat_stale=timedelta(seconds=3 * settings.job_ingest_heartbeat_seconds),
            max_takeovers=settings.job_ingest_max_takeovers,
            traces_per_job=settings.job_ingest_traces_per_job,
            jobs_per_user=settings.job_ingest_jobs_per_user,
            enqueue=enqueue,
            leases=_leases(settings),
            webhooks=WebhookPolicy(
                allowed_networks=tuple(settings.webhook_allowed_networks),
                timeout_s=settings.webhook_timeout_seconds,
                max_attempts=settings.webhook_max_attempts,
                backoff_s=settings.webhook_retry_backoff_seconds,
            ),
            series_retention=settings.series_retention_policy,
        )


def _leases(settings: Any) -> Any:
    """The Redis client fan-out leases live in, when it is on and there is a Redis."""
    if not getattr(settings, "job_ingest_fan_out", False) or not settings.redis_url:
        return None
    import redis

    return redis.Redis.from_url(settings.redis_url)


class BadUpload(Exception):
    """A raw file that cannot be ingested; ``message`` names it and becomes the failure reason."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class IngestInterrupted(Exception):
    """Storage or the database failed mid-ingest; retry with ``claim`` to take the job back."""

    def __init__(self, claim: str, cause: Exception) -> None:
        super().__init__(f"ingest interrupted ({type(cause).__name__}: {cause}); retry with the claim")
        self.claim = claim
        self.cause = cause


__all__ = ["BadUpload", "IngestContext", "IngestInterrupted", "WebhookPolicy"]
