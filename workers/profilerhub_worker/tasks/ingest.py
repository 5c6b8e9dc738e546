"""Job ingest tasks: thin Celery wrappers over ``profilerhub_worker.ingest``.

Arguments are job ids only. ``ingest`` retries storage and database failures with exponential
backoff and jitter, keeping its claim on the job (``claim``), and fails the job with the last
failure once its retries are spent (``give_up``: the claim is not left to lapse, which the
reconciler would take for a dead worker); a worker killed mid-ingest has its task delivered again
(``acks_late``), and the reconciler re-sends jobs whose claim went stale.

The ingest context (database, object store, limits) is built once per worker process from the
worker's settings (its ``WorkerRuntime``; the environment when the worker set none).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from sqlalchemy.exc import OperationalError

from profilerhub_core.errors import Unavailable
from profilerhub_core.tasks import (
    INGEST_CAPTURES,
    INGEST_JOB,
    INGEST_TRACE,
    LIVE_RULES,
    RECONCILE_JOBS,
    SERIES_RETENTION,
    SWEEP_STORAGE,
)
from profilerhub_worker.ingest import IngestContext, IngestInterrupted, ingest_job, reconcile_jobs
from profilerhub_worker.ingest.captures import ingest_captures
from profilerhub_worker.ingest.fanout import help_with_trace
from profilerhub_worker.ingest.live_rules import evaluate_running_jobs
from profilerhub_worker.ingest.run import give_up
from profilerhub_worker.outages import quiet_in_outages
from profilerhub_worker.retention import apply_series_retention
from profilerhub_worker.runtime import runtime_of
from profilerhub_worker.sweep import sweep_storage

log = logging.getLogger("profilerhub_worker.ingest")


def ingest_context(task: Task) -> IngestContext:
    """This worker process's ``IngestContext`` (built on first use, kept in its runtime)."""
    app: Any = task.app
    return runtime_of(app).ingest_context(lambda name, *args: app.send_task(name, args=list(args)))


@shared_task(name=INGEST_JOB, bind=True, max_retries=8)
def ingest(self: Task, job_id: str, claim: str | None = None) -> str:
    """InProgress (completed) -> Processing -> Ready | Failed."""
    ctx = ingest_context(self)
    try:
        return ingest_job(job_id, ctx, claim)
    except IngestInterrupted as exc:
        if self.max_retries is not None and self.request.retries >= self.max_retries:
            return give_up(job_id, ctx, exc, self.request.retries + 1)  # Failed, saying why
        countdown = min(60, 2**self.request.retries)
        raise self.retry(args=[job_id], kwargs={"claim": exc.claim}, countdown=countdown, exc=exc) from exc


@shared_task(name=INGEST_CAPTURES, bind=True)
@quiet_in_outages
def captures(self: Task, job_id: str) -> int:
    """A running job's capture traces not ingested yet, into ``processed/live/captures/`` (idempotent)."""
    return ingest_captures(job_id, ingest_context(self))


@shared_task(name=INGEST_TRACE, bind=True)
def ingest_trace(self: Task, job_id: str, claim: str, n: int, key: str, rel: str) -> str:
    """One trace of a job whose ingest fans out (``ingest.fanout``): parsed here if nobody has it.
    A failure of storage or the database lets the trace go: the task holding the claim takes it."""
    try:
        return help_with_trace(ingest_context(self), job_id, claim, n, key, rel)
    except (Unavailable, OperationalError, OSError) as exc:
        log.info("job %s: trace %d left to the claim's task (%s)", job_id, n, exc)
        return "interrupted"


@shared_task(name=RECONCILE_JOBS, bind=True)
@quiet_in_outages
def reconcile(self: Task) -> dict[str, int]:
    """Re-send ingest for completed jobs nobody took and for jobs whose ingest died."""
    return reconcile_jobs(ingest_context(self))


@shared_task(name=SWEEP_STORAGE, bind=True)
@quiet_in_outages
def sweep(self: Task) -> dict[str, int]:
    """Remove the objects of deleted jobs, users and domains that their delete left behind."""
    ctx = ingest_context(self)
    return sweep_storage(ctx.sessions, ctx.store)


@shared_task(name=SERIES_RETENTION, bind=True)
@quiet_in_outages
def series_retention(self: Task) -> dict[str, int]:
    """Roll Ready jobs' series up to coarser resolutions as they age, then delete them (the policy)."""
    ctx = ingest_context(self)
    return apply_series_retention(ctx.sessions, ctx.store, ctx.series_retention)


@shared_task(name=LIVE_RULES, bind=True)
@quiet_in_outages
def live_rules(self: Task, scan_interval: float = 60.0) -> dict[str, int]:
    """Evaluate the rules of running jobs on what they have streamed so far."""
    return evaluate_running_jobs(ingest_context(self), scan_interval)
