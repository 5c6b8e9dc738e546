"""Claiming a job for ingest, and finishing the claim, by compare-and-set on the job's row.

InProgress (completed) -> Processing     a duplicate or late task finds nothing to claim
Processing -> Processing                 a claim older than ``ctx.stale_after`` (its worker
                                         died) is taken over, or the job Failed after
                                         ``ctx.max_attempts`` claims (``Job.ingest_attempts``)
Processing -> Ready | Failed             ``finish``, only while the claim is still ours
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from profilerhub_core.db.models import Job, JobStatus, utcnow
from profilerhub_core.records.job_states import transition
from profilerhub_worker.ingest.context import IngestContext


def claim(ctx: IngestContext, job_id: str, resume: str | None = None) -> datetime | None:
    """Take the job for ingest; the claim's stamp, or None when there is nothing to do."""
    now = utcnow()
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        if job is None:
            return None
        if job.status is JobStatus.InProgress and job.completed_at is not None:
            moved = transition(session, job_id, JobStatus.InProgress, JobStatus.Processing, now=now)
        elif job.status is JobStatus.Processing and (
            (resume is not None and job.updated_at.isoformat() == resume)
            or now - job.updated_at > ctx.stale_after
        ):
            if resume is None and job.ingest_attempts >= ctx.max_attempts:
                reason = (
                    f"Ingest did not finish after {ctx.max_attempts} attempts (each limited to "
                    f"{ctx.stale_after.total_seconds():.0f}s); the worker may have run out of memory"
                )
                transition(
                    session, job_id, JobStatus.Processing, JobStatus.Failed,
                    claimed_at=job.updated_at, failure_reason=reason,
                )  # fmt: skip
                session.commit()
                return None
            moved = transition(
                session,
                job_id,
                JobStatus.Processing,
                JobStatus.Processing,
                claimed_at=job.updated_at,
                now=now,
            )
        else:
            return None
        session.commit()
    return now if moved else None


def finish(ctx: IngestContext, job_id: str, stamp: datetime, to: JobStatus, **fields: Any) -> bool:
    with ctx.sessions() as session:
        moved = transition(session, job_id, JobStatus.Processing, to, claimed_at=stamp, **fields)
        session.commit()
    return moved


__all__ = ["claim", "finish"]
