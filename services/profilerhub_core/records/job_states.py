"""The job state machine, written down once.

    InProgress ──► Processing ──► Ready
        │              │
        └──────────────┴──────► Failed

``InProgress``: the run is uploading raw files. ``complete`` stamps ``completed_at`` and sends the
ingest task; the task claims the job (InProgress -> Processing) and ends it Ready or Failed.
``Processing -> Processing`` is a *reclaim*: a worker that died mid-ingest leaves the job in
Processing, and the reconciler (or a later task) takes it over once its claim is stale.

``transition`` is the only code that changes ``Job.status`` after the row is created. It is a
compare-and-set (``UPDATE jobs SET status=:to WHERE id=:id AND status=:from``), optionally also
on ``updated_at`` (the claim's time stamp), so of two workers racing on one job exactly one wins
and a duplicated or late task finds the state moved on and does nothing. Every change is written
to the audit log in the same transaction; the caller commits.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import Job, JobStatus, utcnow
from profilerhub_core.records.audit import FAILED, SUCCESS
from profilerhub_core.records.moves import after_move, rows_changed

TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    JobStatus.InProgress: frozenset({JobStatus.Processing, JobStatus.Failed}),
    JobStatus.Processing: frozenset({JobStatus.Processing, JobStatus.Ready, JobStatus.Failed}),
    JobStatus.Ready: frozenset(),
    JobStatus.Failed: frozenset(),
}

FINAL = frozenset({JobStatus.Ready, JobStatus.Failed})

# The columns a transition may set besides status.
_FIELDS = frozenset({"failure_reason", "summary"})


class IllegalTransition(ValueError):
    """A transition the table above does not allow: a programming error, never user input."""


def can_transition(from_: JobStatus, to: JobStatus) -> bool:
    return to in TRANSITIONS[from_]


def transition(
    session: Session,
    job_id: str,
    from_: JobStatus,
    to: JobStatus,
    *,
    actor: str = "worker",
    claimed_at: datetime | None = None,
    now: datetime | None = None,
    **fields: Any,
) -> bool:
    """Move job ``job_id`` from ``from_`` to ``to`` if it is still there; True if it moved.

    ``claimed_at``: also require ``updated_at`` to equal it (the stamp of the claim being
    continued or taken over), so a worker that lost its claim cannot finish the job. ``now``
    becomes the new ``updated_at`` (the new claim's stamp). ``fields`` may set
    ``failure_reason`` and ``summary``. Flushes; the caller commits.
    """
    if not can_transition(from_, to):
        raise IllegalTransition(f"a job cannot go from {from_} to {to}")
    unknown = set(fields) - _FIELDS
    if unknown:
        raise IllegalTransition(f"a transition cannot set {sorted(unknown)}")
    now = now or utcnow()
    stmt = sa.update(Job).where(Job.id == job_id, Job.status == from_)
    if claimed_at is not None:
        stmt = stmt.where(Job.updated_at == claimed_at)
    result = session.execute(
        stmt.values(status=to, updated_at=now, **fields).execution_options(synchronize_session=False)
    )
    moved = bool(rows_changed(result))
    if moved:
        outcome = FAILED if to is JobStatus.Failed else SUCCESS
        reason = fields.get("failure_reason")
        after_move(session, Job, job_id, from_, to, actor=actor, failure_reason=reason, outcome=outcome)
    return moved


__all__ = ["FINAL", "TRANSITIONS", "IllegalTransition", "can_transition", "transition"]
