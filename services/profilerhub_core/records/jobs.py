"""Jobs: one profiled training run of one user (raw files in storage, status, summary).

Status changes go through ``job_states.transition`` only; the functions here create, read,
mark complete and delete rows. Like every model function they flush; the caller commits.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import Domain, Job, JobStatus, UserProfile, utcnow
from profilerhub_core.errors import Conflict, NotFound
from profilerhub_core.records.states import rows_changed


def job_not_found(job_id: str) -> NotFound:
    return NotFound(f"Job '{job_id}' not found")


def create_job(
    session: Session,
    domain: Domain,
    user: UserProfile,
    name: str,
    metric_definitions: list[dict[str, str]] | None = None,
    rules: list[dict[str, Any]] | None = None,
    stop_on: list[str] | None = None,
) -> Job:
    """A new ``InProgress`` job of ``user``, ready to take raw files."""
    job = Job(
        domain_id=domain.id,
        user_id=user.id,
        name=name,
        status=JobStatus.InProgress,
        metric_definitions=list(metric_definitions or []),
        rules=rules,
        stop_on=stop_on or None,
    )
    session.add(job)
    session.flush()
    return job


def require_job(session: Session, user: UserProfile, job_id: str) -> Job:
    """``user``'s job ``job_id``; ``NotFound`` when missing or owned by someone else (alike)."""
    job = session.scalar(sa.select(Job).where(Job.id == job_id, Job.user_id == user.id))
    if job is None:
        raise job_not_found(job_id)
    return job


def jobs_query(user: UserProfile, status: JobStatus | None = None) -> sa.Select[Any]:
    """``user``'s jobs, optionally only those in ``status`` (unordered; paginate by created_at, id)."""
    stmt = sa.select(Job).where(Job.user_id == user.id)
    return stmt if status is None else stmt.where(Job.status == status)


STOP_HEADER = "X-ProfilerHub-Stop"
"""Sent with every answer to an upload of a job whose stop was requested: the rule's name."""


def stop_header(job: Job) -> dict[str, str]:
    """``{STOP_HEADER: rule}`` once a stop was requested for ``job``, else nothing."""
    rule = (job.stop_request or {}).get("rule")
    return {STOP_HEADER: str(rule)} if rule else {}


def require_uploading(job: Job) -> None:
    """Raise ``Conflict`` unless ``job`` still takes files (``InProgress`` and not completed)."""
    if job.status is not JobStatus.InProgress or job.completed_at is not None:
        state = "completed" if job.status is JobStatus.InProgress else job.status.value
        raise Conflict(f"Job '{job.id}' is {state}; files can only be added before it is completed")


def mark_complete(session: Session, job: Job, now: datetime | None = None) -> bool:
    """Stamp ``completed_at`` on an ``InProgress`` job; False when it was already completed.

    Completing twice is harmless (the SDK retries after a lost answer). A job already being
    processed or finished answers ``Conflict``.
    """
    if job.status is not JobStatus.InProgress:
        if job.completed_at is not None:
            return False
        raise Conflict(f"Job '{job.id}' is {job.status.value}; it cannot be completed")
    if job.completed_at is not None:
        return False
    result = session.execute(
        sa.update(Job)
        .where(Job.id == job.id, Job.status == JobStatus.InProgress, Job.completed_at.is_(None))
        .values(completed_at=now or utcnow(), updated_at=now or utcnow())
        .execution_options(synchronize_session=False)
    )
    session.expire(job)
    return bool(rows_changed(result))


def delete_job(session: Session, job: Job) -> None:
    """Delete the row (its objects are the caller's to remove); refused while ``Processing``."""
    if job.status is JobStatus.Processing:
        raise Conflict(f"Job '{job.id}' is being processed; delete it once it is Ready or Failed")
    session.delete(job)
    session.flush()


__all__ = [
    "STOP_HEADER",
    "create_job",
    "delete_job",
    "job_not_found",
    "jobs_query",
    "mark_complete",
    "require_job",
    "require_uploading",
    "stop_header",
]
