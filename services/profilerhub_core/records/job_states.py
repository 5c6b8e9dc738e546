"""The job state machine, written down once.

    InProgress ──► Processing ──► Ready
        │   ▲          │            │
        │   └──────────┼────────────┤  redelivery: files the run could not deliver arrive later
        └──────────────┴──────► Failed

``InProgress``: the run is uploading raw files. ``complete`` stamps ``completed_at`` and sends the
ingest task; the task claims the job (InProgress -> Processing) and ends it Ready or Failed.
``Processing -> Processing`` is a *reclaim*: a worker that died mid-ingest leaves the job in
Processing, and the reconciler (or a later task) takes it over once its claim is stale.

``Ready``/``Failed -> InProgress`` is a *redelivery*: a job whose run completed it with files
missing (``Job.undelivered``) takes them when they arrive (``profilerhub upload --spilled``, the
next run) and a new ``complete`` sends it back to be ingested with everything.

``transition`` is the only code that changes ``Job.status`` after the row is created: a
compare-and-set on the one mechanism in ``records.states``, optionally also on ``updated_at``
(the claim's time stamp), so of two workers racing on one job exactly one wins and a duplicated
or late task finds the state moved on and does nothing. Every change is written to the audit log
in the same transaction; the caller commits.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from profilerhub_core.db.models import JOB_LIST_FIGURES, Job, JobStatus
from profilerhub_core.records.audit import FAILED, SUCCESS
from profilerhub_core.records.states import IllegalTransition, StateMachine

TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    JobStatus.InProgress: frozenset({JobStatus.Processing, JobStatus.Failed}),
    JobStatus.Processing: frozenset({JobStatus.Processing, JobStatus.Ready, JobStatus.Failed}),
    JobStatus.Ready: frozenset({JobStatus.InProgress}),
    JobStatus.Failed: frozenset({JobStatus.InProgress}),
}

FINAL = frozenset({JobStatus.Ready, JobStatus.Failed})

JOB_STATES = StateMachine(
    model=Job,
    noun="a job",
    transitions=TRANSITIONS,
    fields=frozenset(
        {
            "failure_reason",
            "summary",
            "ingest_attempts",
            "ingest_takeovers",
            "ingest_heartbeat_at",
            "rule_results",
            "undelivered",
            "completed_at",
            "series_resolution_s",
            "series_deleted_at",
            *JOB_LIST_FIGURES,
        }
    ),
    stamps=("updated_at",),
    outcome=lambda to: FAILED if to is JobStatus.Failed else SUCCESS,
)


def can_transition(from_: JobStatus, to: JobStatus) -> bool:
    return JOB_STATES.can(from_, to)


def transition(
    session: Session,
    job_id: str,
    from_: JobStatus,
    to: JobStatus,
    *,
    actor: str = "worker",
    claimed_at: datetime | None = None,
    now: datetime | None = None,
    attempt: bool = True,
    takeover: bool = False,
    audited: bool = True,
    **fields: Any,
) -> bool:
    """Move job ``job_id`` from ``from_`` to ``to`` if it is still there; True if it moved.

    ``claimed_at``: also require ``updated_at`` to equal it (the stamp of the claim being
    continued or taken over), so a worker that lost its claim cannot finish the job. ``now``
    becomes the new ``updated_at`` (the new claim's stamp). ``fields`` may set
    ``failure_reason``, ``summary``, the list's figures (``duration_s``, ``steps``, ``gpus``,
    ``ranks``) and what the series retention did (``series_resolution_s``, ``series_deleted_at``:
    cleared when a job is ingested again). A move into Processing (a claim) counts one more
    ``ingest_attempts`` unless ``attempt`` is False (a worker taking back its own claim to retry
    a storage failure, or taking over from a worker that died: not a new attempt). ``takeover``
    counts one more ``ingest_takeovers`` instead. ``audited=False``: the caller audits the operation
    that moved it (``StateMachine.move``). Flushes; the caller commits.
    """
    guards = [Job.updated_at == claimed_at] if claimed_at is not None else []
    if to is JobStatus.Processing and attempt:
        fields["ingest_attempts"] = Job.ingest_attempts + 1
    if to is JobStatus.Processing and takeover:
        fields["ingest_takeovers"] = Job.ingest_takeovers + 1
    return JOB_STATES.move(session, job_id, from_, to, actor=actor, guards=guards, now=now, audited=audited,
                           **fields)  # fmt: skip


__all__ = ["FINAL", "JOB_STATES", "TRANSITIONS", "IllegalTransition", "can_transition", "transition"]
