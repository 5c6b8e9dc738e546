"""Claiming a job for ingest, and finishing the claim, by compare-and-set on the job's row.

InProgress (completed) -> Processing     a duplicate or late task finds nothing to claim; a job
                                         whose owner already has ``ctx.jobs_per_user`` jobs
                                         Processing (live claims) is not claimed: ``UserAtLimit``,
                                         and it waits, completed, until one of them ends
                                         (``next_of_user``; the reconciler re-sends it meanwhile)
Processing -> Processing                 a stale claim is taken over: no heartbeat for
                                         ``ctx.heartbeat_stale`` (its worker died: counted in
                                         ``Job.ingest_takeovers``, not an attempt, the job Failed
                                         after ``ctx.max_takeovers``), or older than
                                         ``ctx.stale_after`` (it hangs: an attempt, the job Failed
                                         after ``ctx.max_attempts``); a worker retrying with its
                                         own claim (``resume``) takes it back, counting nothing
Processing -> Ready | Failed             ``finish``, only while the claim is still ours
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import Job, JobStatus, utcnow
from profilerhub_core.outage import is_outage
from profilerhub_core.records.ingest_queue import FairShare, ingesting
from profilerhub_core.records.ingest_queue import stale_claims as queue_stale_claims
from profilerhub_core.records.job_states import transition
from profilerhub_worker.ingest.context import IngestContext

log = logging.getLogger("profilerhub_worker.ingest")


class UserAtLimit(Exception):
    """The job's owner has ``ctx.jobs_per_user`` jobs being ingested already: it waits its turn."""


def claim(ctx: IngestContext, job_id: str, resume: str | None = None) -> datetime | None:
    """Take the job for ingest; the claim's stamp, or None when there is nothing to do.

    Raises ``UserAtLimit`` when the job is ready to claim but its owner has their share already."""
    now = utcnow()
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        if job is None:
            return None
        if job.status is JobStatus.InProgress and job.completed_at is not None:
            if ctx.jobs_per_user and _ingesting(ctx, session, job.user_id, now) >= ctx.jobs_per_user:
                raise UserAtLimit(job_id)
            moved = transition(
                session, job_id, JobStatus.InProgress, JobStatus.Processing, now=now, ingest_heartbeat_at=now
            )
        elif job.status is JobStatus.Processing and (
            (resume is not None and job.updated_at.isoformat() == resume) or is_stale(ctx, job, now)
        ):
            # Taking over from a dead worker is not the job's failure; a hang past the limit is.
            takeover = resume is None and worker_died(ctx, job, now)
            attempt = resume is None and not takeover
            reason = _given_up(ctx, job) if takeover or attempt else None
            if reason is not None:
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
                attempt=attempt,
                takeover=takeover,
                ingest_heartbeat_at=now,
            )
        else:
            return None
        session.commit()
    return now if moved else None


def _share(ctx: IngestContext) -> FairShare:
    """The context's limits as the hub reads them too (``records.ingest_queue``)."""
    return FairShare(
        jobs_per_user=ctx.jobs_per_user,
        traces_per_job=ctx.traces_per_job,
        heartbeat_stale=ctx.heartbeat_stale,
        stale_after=ctx.stale_after,
    )


def _ingesting(ctx: IngestContext, session: Session, user_id: str, now: datetime) -> int:
    """How many of the user's jobs are Processing under a live claim (``ingest_queue.ingesting``)."""
    return ingesting(session, _share(ctx), user_id, now)


def next_of_user(ctx: IngestContext, user_id: str) -> list[str]:
    """The user's completed jobs waiting for ingest, oldest first, as many as their share has room
    for: sent again when one of their ingests ends (``run.ingest_job``)."""
    if not ctx.jobs_per_user:
        return []
    now = utcnow()
    with ctx.sessions() as session:
        room = ctx.jobs_per_user - _ingesting(ctx, session, user_id, now)
        if room <= 0:
            return []
        waiting = (
            sa.select(Job.id)
            .where(Job.user_id == user_id, Job.status == JobStatus.InProgress, Job.completed_at.is_not(None))
            .order_by(Job.completed_at)
            .limit(room)
        )
        return list(session.scalars(waiting))


def _given_up(ctx: IngestContext, job: Job) -> str | None:
    """Why a job must not be claimed again (its attempts or takeovers are spent), or None."""
    if job.ingest_attempts >= ctx.max_attempts:
        return (
            f"Ingest did not finish after {ctx.max_attempts} attempts (each limited to "
            f"{ctx.stale_after.total_seconds():.0f}s); the worker may have run out of memory"
        )
    if job.ingest_takeovers >= ctx.max_takeovers:
        return (
            f"The worker ingesting this job died {job.ingest_takeovers} times (killed, or out of "
            "memory); it is not tried again"
        )
    return None


def worker_died(ctx: IngestContext, job: Job, now: datetime) -> bool:
    """Whether a Processing job's claim has lost its heartbeat (its worker is gone)."""
    return now - (job.ingest_heartbeat_at or job.updated_at) > ctx.heartbeat_stale


def is_stale(ctx: IngestContext, job: Job, now: datetime) -> bool:
    """Whether a Processing job's claim is dead: no heartbeat lately, or running past the limit."""
    return worker_died(ctx, job, now) or now - job.updated_at > ctx.stale_after


def stale_claims(ctx: IngestContext, now: datetime) -> sa.ColumnElement[bool]:
    """The SQL form of ``is_stale`` over Processing jobs (``ingest_queue.stale_claims``)."""
    return queue_stale_claims(_share(ctx), now)


class Heartbeat:
    """A running ingest's claim kept live: ``ingest_heartbeat_at`` refreshed every
    ``ctx.heartbeat_every`` by a daemon thread, only while the claim is still ours.

    That thread needs the GIL, and parsing one large file holds it for seconds at a time (msgspec
    decodes a whole document, or a whole batch of events, in one call: 4 s for 250 MiB on a loaded
    machine), so a thread alone would let a healthy ingest look dead. Around a file's parse,
    ``parsing(nbytes)`` therefore writes, from the ingest's own thread and before the parse starts,
    a heartbeat as far ahead as the parse may take at ``ctx.slowest_parse_bytes_per_second``; the
    thread never writes one earlier than that meanwhile, and the parse's end writes the present
    again. A worker killed mid-parse is then taken over that much later, never a live one sooner.
    """

    def __init__(self, ctx: IngestContext, job_id: str, stamp: datetime) -> None:
        self.ctx, self.job_id, self.stamp = ctx, job_id, stamp
        self._promised: datetime | None = None
        self._lock = threading.Lock()  # a beat and a promise are written one at a time, in order

    def beat(self) -> None:
        with self._lock:
            now = utcnow()
            self._write(max(now, self._promised) if self._promised else now)

    @contextmanager
    def parsing(self, nbytes: int) -> Iterator[None]:
        """Keep the claim live while a file of ``nbytes`` (decompressed) is parsed."""
        seconds = nbytes / self.ctx.slowest_parse_bytes_per_second
        if seconds < 1:  # a short hold: the thread's beats cover it
            yield
            return
        with self._lock:
            self._promised = utcnow() + timedelta(seconds=seconds)
            self._write(self._promised)
        try:
            yield
        finally:
            with self._lock:
                self._promised = None
                self._write(utcnow())

    def _write(self, at: datetime) -> None:
        try:
            with self.ctx.sessions() as session:
                session.execute(
                    sa.update(Job)
                    .where(Job.id == self.job_id, Job.status == JobStatus.Processing)
                    .where(Job.updated_at == self.stamp)
                    # updated_at is the claim's stamp: kept (its onupdate would end the claim)
                    .values(ingest_heartbeat_at=at, updated_at=self.stamp)
                    .execution_options(synchronize_session=False)
                )
                session.commit()
        except Exception as exc:  # the database is down: the claim may go stale, and is then retaken
            if not is_outage(exc):  # an outage is logged once, by the engine
                log.warning("job %s: heartbeat not written", self.job_id, exc_info=True)


@contextmanager
def heartbeat(ctx: IngestContext, job_id: str, stamp: datetime) -> Iterator[Heartbeat]:
    """Keep the claim live while the block runs (``Heartbeat``)."""
    kept = Heartbeat(ctx, job_id, stamp)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(ctx.heartbeat_every.total_seconds()):
            kept.beat()

    thread = threading.Thread(target=beat, name=f"ingest-heartbeat-{job_id[:8]}", daemon=True)
    thread.start()
    try:
        yield kept
    finally:
        stop.set()
        thread.join()


def finish(ctx: IngestContext, job_id: str, stamp: datetime, to: JobStatus, **fields: Any) -> bool:
    with ctx.sessions() as session:
        moved = transition(session, job_id, JobStatus.Processing, to, claimed_at=stamp, **fields)
        session.commit()
    return moved


__all__ = [
    "Heartbeat",
    "UserAtLimit",
    "claim",
    "finish",
    "heartbeat",
    "is_stale",
    "next_of_user",
    "stale_claims",
    "worker_died",
]
