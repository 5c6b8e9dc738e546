"""Where a completed job stands in the ingest queue, as the worker's fair share decides it.

A completed job stays ``InProgress`` until a worker claims it (``job_states``: nothing else
writes ``status``), so a job waiting its turn and a job nobody has reached yet look alike by status
alone. ``status_reason`` says which, from what the claim itself counts (``ingesting``: the owner's
jobs Processing under a live claim, the rule ``profilerhub_worker.ingest.claim`` applies against
``job_ingest_jobs_per_user``), and for a job being ingested, how many of its traces wait for the
per-job window (``job_ingest_traces_per_job``). It is read, never stored: it changes as other jobs
move, and is right at the moment it is asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import Job, JobStatus, utcnow


@dataclass(frozen=True)
class FairShare:
    """The limits a claim applies, and when a claim counts as dead (from one ``Settings``)."""

    jobs_per_user: int = 0
    """Jobs of one user ingested at once; 0: no limit."""
    traces_per_job: int = 16
    """Traces of one job parsed at once when its ingest fans out."""
    heartbeat_stale: timedelta = timedelta(seconds=30)
    """A claim unmarked this long is dead (its worker died)."""
    stale_after: timedelta = timedelta(seconds=900)
    """A claim older than this is dead (its ingest hangs)."""

    @classmethod
    def of(cls, settings: Any) -> FairShare:
        """The limits ``settings`` (a ``Settings``) give the workers."""
        return cls(
            jobs_per_user=settings.job_ingest_jobs_per_user,
            traces_per_job=settings.job_ingest_traces_per_job,
            heartbeat_stale=timedelta(seconds=3 * settings.job_ingest_heartbeat_seconds),
            stale_after=timedelta(seconds=settings.job_ingest_timeout_seconds),
        )


def stale_claims(share: FairShare, now: datetime) -> sa.ColumnElement[bool]:
    """Processing jobs whose claim is dead: no heartbeat for ``heartbeat_stale``, or older than
    ``stale_after`` (the SQL form of the worker's ``claim.is_stale``)."""
    beat = sa.func.coalesce(Job.ingest_heartbeat_at, Job.updated_at)
    return sa.and_(
        Job.status == JobStatus.Processing,
        sa.or_(beat < now - share.heartbeat_stale, Job.updated_at < now - share.stale_after),
    )


def ingesting(session: Session, share: FairShare, user_id: str, now: datetime) -> int:
    """How many of the user's jobs are Processing under a live claim (a dead worker's do not count).

    Two claims at the same moment may both see room and go one over the limit: the share is a bound
    on what one user holds, not a lock, so that race costs a little fairness and nothing else."""
    dead = stale_claims(share, now)
    live = sa.and_(Job.user_id == user_id, Job.status == JobStatus.Processing, sa.not_(dead))
    return session.scalar(sa.select(sa.func.count()).select_from(Job).where(live)) or 0


def status_reason(
    session: Session,
    job: Job,
    share: FairShare,
    progress: dict[str, int] | None = None,
    now: datetime | None = None,
) -> str | None:
    """Why job ``job`` is where it is in the ingest queue, or None when it is not queued.

    A completed ``InProgress`` job: "Waiting: 2 of your jobs are ingesting (limit 2)" while its owner
    holds their share, else that it waits for an ingest worker. A ``Processing`` job whose
    ``progress`` (``job_outputs.ingest_progress``) shows more traces left than the per-job window:
    how many wait for it."""
    if job.status is JobStatus.InProgress and job.completed_at is not None:
        if share.jobs_per_user:
            held = ingesting(session, share, job.user_id, now or utcnow())
            if held >= share.jobs_per_user:
                jobs = "job is" if held == 1 else "jobs are"
                return f"Waiting: {held} of your {jobs} ingesting (limit {share.jobs_per_user})"
        return "Queued: uploaded, waiting for an ingest worker"
    if job.status is JobStatus.Processing and progress:
        left = progress.get("traces", 0) - progress.get("traces_done", 0)
        if left > share.traces_per_job:
            return (
                f"Ingesting {share.traces_per_job} traces at a time (limit {share.traces_per_job} per job); "
                f"{left - share.traces_per_job} wait their turn"
            )
    return None


__all__ = ["FairShare", "ingesting", "stale_claims", "status_reason"]
