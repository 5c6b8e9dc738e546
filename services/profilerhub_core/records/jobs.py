"""Jobs: one profiled training run of one user (raw files in storage, status, summary).

Status changes go through ``job_states.transition`` only; the functions here create, read,
mark complete and delete rows. Like every model function they flush; the caller commits.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import Domain, Job, JobStatus, UserProfile, utcnow
from profilerhub_core.errors import Conflict, NotFound
from profilerhub_core.records.job_states import transition
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
"""Sent with every answer to an upload of a job whose stop was requested: the rule's name, or
``USER_STOP`` when a person asked (the SDK raises ``ph.StopTraining`` for that one in any run)."""
USER_STOP = "StopTrainingJob"


def stopped_by_user(job: Job) -> bool:
    """A person asked the job's run to stop (``POST …/stop``, ``StopTrainingJob``, the console)."""
    return (job.stop_request or {}).get("by") == "user"


def stop_header(job: Job) -> dict[str, str]:
    """``{STOP_HEADER: rule}`` once a stop was requested for ``job``, else nothing."""
    if stopped_by_user(job):
        return {STOP_HEADER: USER_STOP}
    rule = (job.stop_request or {}).get("rule")
    return {STOP_HEADER: str(rule)} if rule else {}


CAPTURE_HEADER = "X-ProfilerHub-Capture"
"""Sent with every answer to an upload of a running job with a capture asked: the newest request as
compact JSON, ``{"id", "steps", "start_step", "record_shapes"}`` (the SDK runs each id once)."""


def capture_header(job: Job) -> dict[str, str]:
    """``{CAPTURE_HEADER: json}`` for the newest capture asked of ``job``, else nothing."""
    if not job.captures:
        return {}
    newest = job.captures[-1]
    wanted = {k: newest.get(k) for k in ("id", "steps", "start_step", "record_shapes")}
    return {CAPTURE_HEADER: json.dumps(wanted, separators=(",", ":"))}


def set_fields(session: Session, job: Job, **values: Any) -> None:
    """Set columns the state machine does not own (``captures``, ``rules``, ``stop_request``) on
    ``job``'s row (flushed, the row expired; the caller commits)."""
    session.execute(
        sa.update(Job).where(Job.id == job.id).values(**values).execution_options(synchronize_session=False)
    )
    session.expire(job)


def add_capture(session: Session, job: Job, capture: dict[str, Any]) -> None:
    """Append ``capture`` to the job's captures (flushed; the caller commits)."""
    set_fields(session, job, captures=[*(job.captures or []), capture])


def set_rules(session: Session, job: Job, rules: list[dict[str, Any]]) -> None:
    """The job's own rules (checked ``[{"rule", "parameters"}]``; flushed, the caller commits)."""
    set_fields(session, job, rules=rules)


def missing_files(job: Job) -> int:
    """How many files the job's run said it could not deliver (0: all arrived)."""
    return int((job.undelivered or {}).get("missing_files") or 0)


def is_running(job: Job) -> bool:
    """The run is still uploading: InProgress and not completed."""
    return job.status is JobStatus.InProgress and job.completed_at is None


def awaits_files(job: Job) -> bool:
    """A Ready or Failed job whose run completed it with spilled files still to come."""
    undelivered = job.undelivered or {}
    spilled = missing_files(job) - int(undelivered.get("lost_files") or 0)
    return job.status in (JobStatus.Ready, JobStatus.Failed) and spilled > 0


def takes_files(job: Job) -> bool:
    """``InProgress`` and not completed, or awaiting its run's spilled files (``awaits_files``)."""
    return is_running(job) or awaits_files(job)


def require_uploading(job: Job) -> None:
    """Raise ``Conflict`` unless ``job`` still takes files (``takes_files``)."""
    if not takes_files(job):
        state = "completed" if job.status is JobStatus.InProgress else job.status.value
        raise Conflict(f"Job '{job.id}' is {state}; files can only be added before it is completed")


def undelivered_warning(job: Job) -> str | None:
    """What a job shows while files its run could not deliver are missing, with what to do."""
    missing = missing_files(job)
    if not missing:
        return None
    undelivered = job.undelivered or {}
    lost = int(undelivered.get("lost_files") or 0)
    spill = undelivered.get("spill") or {}
    parts = [f"{missing} file(s) not delivered by the training run"]
    if spill.get("files"):
        parts.append(
            f"{spill['files']} spilled on host {spill.get('host') or '?'} in {spill.get('dir') or '?'}: run "
            f"`{spill.get('command') or 'profilerhub upload --spilled'}` there (or start the next run) "
            "to deliver them and re-ingest this job"
        )
    if lost:
        parts.append(f"{lost} lost for good (the SDK's spill folder was full or unwritable)")
    return "; ".join(parts)


def mark_complete(
    session: Session, job: Job, undelivered: dict[str, Any] | None = None, now: datetime | None = None
) -> bool:
    """Stamp ``completed_at`` on an ``InProgress`` job; False when it was already completed.

    ``undelivered`` is what the run said it could not deliver (``Job.undelivered``). Completing
    twice is harmless (the SDK retries after a lost answer). A Ready or Failed job awaiting its
    spilled files is sent back to ``InProgress`` (completed) when this ``complete`` reports fewer
    missing files than the last one: they arrived, and it is ingested anew. Any other job already
    being processed or finished answers ``Conflict``.
    """
    now = now or utcnow()
    if awaits_files(job):
        if missing_files(job) <= int((undelivered or {}).get("missing_files") or 0):
            return False  # the first complete repeated: nothing new arrived
        return redeliver(session, job, undelivered, now)
    if job.status is not JobStatus.InProgress:
        if job.completed_at is not None:
            return False
        raise Conflict(f"Job '{job.id}' is {job.status.value}; it cannot be completed")
    if job.completed_at is not None:
        return False
    result = session.execute(
        sa.update(Job)
        .where(Job.id == job.id, Job.status == JobStatus.InProgress, Job.completed_at.is_(None))
        .values(completed_at=now, updated_at=now, undelivered=undelivered)
        .execution_options(synchronize_session=False)
    )
    session.expire(job)
    return bool(rows_changed(result))


def redeliver(session: Session, job: Job, undelivered: dict[str, Any] | None, now: datetime) -> bool:
    """Ready/Failed -> InProgress (completed now): the job's missing files arrived; ingest it again
    (which writes the list's figures anew: until then the job has none, like any job not Ready).
    Not audited: the operation's row (``CompleteJob``) is the hub's use case's."""
    moved = transition(
        session,
        job.id,
        job.status,
        JobStatus.InProgress,
        actor="hub",
        audited=False,
        claimed_at=job.updated_at,
        now=now,
        completed_at=now,
        undelivered=undelivered,
        failure_reason=None,
        ingest_attempts=0,
        duration_s=None,
        steps=None,
        gpus=None,
        ranks=None,
        series_resolution_s=None,  # ingest writes them at full resolution again
        series_deleted_at=None,
    )
    session.expire(job)
    return moved


def user_raw_bytes(session: Session, user_id: str, *, besides_job: str | None = None) -> int:
    """Raw bytes stored for the user's jobs (``Job.raw_bytes``), leaving out ``besides_job``."""
    stmt = sa.select(sa.func.coalesce(sa.func.sum(Job.raw_bytes), 0)).where(Job.user_id == user_id)
    if besides_job is not None:
        stmt = stmt.where(Job.id != besides_job)
    return int(session.scalar(stmt) or 0)


def record_raw_bytes(session: Session, job_id: str, total: int) -> None:
    """Set the job's raw byte count (after an upload); the caller commits."""
    session.execute(
        sa.update(Job)
        .where(Job.id == job_id)
        .values(raw_bytes=total)
        .execution_options(synchronize_session=False)
    )


def delete_job(session: Session, job: Job) -> None:
    """Delete the row (its objects are the caller's to remove); refused while ``Processing``."""
    if job.status is JobStatus.Processing:
        raise Conflict(f"Job '{job.id}' is being processed; delete it once it is Ready or Failed")
    session.delete(job)
    session.flush()


__all__ = [
    "CAPTURE_HEADER",
    "STOP_HEADER",
    "add_capture",
    "capture_header",
    "set_fields",
    "set_rules",
    "USER_STOP",
    "awaits_files",
    "create_job",
    "delete_job",
    "job_not_found",
    "jobs_query",
    "mark_complete",
    "missing_files",
    "record_raw_bytes",
    "redeliver",
    "is_running",
    "require_job",
    "require_uploading",
    "stop_header",
    "stopped_by_user",
    "takes_files",
    "undelivered_warning",
    "user_raw_bytes",
]
