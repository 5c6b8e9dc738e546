"""The ingest reconciler: re-send ingest for jobs nobody finished, close jobs a dead run left open."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import sqlalchemy as sa

from profilerhub_core.db.models import Domain, Job, JobStatus, utcnow
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import Unavailable
from profilerhub_core.jobstorage import JobPlace, place_of
from profilerhub_core.records.audit import SUCCESS, record_audit
from profilerhub_core.records.job_states import transition
from profilerhub_core.records.jobs import mark_complete
from profilerhub_core.storage import layout
from profilerhub_core.tasks import INGEST_JOB
from profilerhub_worker.ingest.claim import stale_claims
from profilerhub_worker.ingest.context import IngestContext
from profilerhub_worker.ingest.write import put_status

log = logging.getLogger("profilerhub_worker.ingest")


def reconcile_jobs(ctx: IngestContext, now: datetime | None = None) -> dict[str, int]:
    """Re-send ingest for completed jobs nobody claimed and for Processing jobs whose claim is
    stale, then close jobs left uploading by a dead run (``close_idle_jobs``). A completed job
    whose owner has their share of ingests running (``ctx.jobs_per_user``) is not re-sent: it
    would only wait again, and its task would lengthen the queue an autoscaler reads; the end of
    one of the owner's ingests sends it (``claim.next_of_user``)."""
    now = now or utcnow()
    counts = {"resent": 0}
    if ctx.enqueue is not None:
        with ctx.sessions() as session:
            waiting = sa.select(Job.id).where(
                Job.status == JobStatus.InProgress,
                Job.completed_at.is_not(None),
                Job.completed_at < now - ctx.resend_after,
            )
            if ctx.jobs_per_user:
                live = sa.and_(Job.status == JobStatus.Processing, sa.not_(stale_claims(ctx, now)))
                full = (
                    sa.select(Job.user_id)
                    .where(live)
                    .group_by(Job.user_id)
                    .having(sa.func.count() >= ctx.jobs_per_user)
                )
                waiting = waiting.where(Job.user_id.not_in(full))
            stale = sa.select(Job.id).where(stale_claims(ctx, now))
            ids = list(session.scalars(waiting)) + list(session.scalars(stale))
        for job_id in ids:
            ctx.enqueue(INGEST_JOB, job_id)
            counts["resent"] += 1
    return counts | close_idle_jobs(ctx, now)


def close_idle_jobs(ctx: IngestContext, now: datetime) -> dict[str, int]:
    """Close every ``InProgress`` job that was never completed and has had no upload for its
    domain's ``job_idle_hours`` (a training process killed before ``finish``).

    With a ``job.json`` among its raw files (the SDK writes one at ``init``), the job is completed
    and ingested: its summary says ``"partial": true``. Without one there is nothing to read, and
    it is ``Failed`` with a reason. Both are compare-and-set: an upload or ``complete`` racing
    with this wins and the job stays open.
    """
    counts = {"partial": 0, "abandoned": 0}
    with ctx.sessions() as session:
        rows = session.execute(
            sa.select(Job.id, Job.name, Job.updated_at, Domain.settings, Domain.name)
            .join(Domain, Domain.id == Job.domain_id)
            .where(Job.status == JobStatus.InProgress, Job.completed_at.is_(None))
        ).all()
    for job_id, name, updated_at, domain_settings, domain_name in rows:
        hours = DomainSettings.of(domain_settings).job_idle_hours
        idle_after = timedelta(hours=hours)
        if not hours or now - updated_at <= idle_after:
            continue
        with ctx.sessions() as session:
            job = session.get(Job, job_id)
            if job is None:
                continue
            place = place_of(job)
        objects = list(ctx.store.list(place.raw_prefix))
        if objects and now - max(info.modified for info in objects) <= idle_after:
            continue  # still uploading (straight to S3: the row does not see it)
        has_job_json = any(layout.relative_name(o.key, place.raw_prefix) == "job.json" for o in objects)
        closed = _close_idle_job(ctx, place, domain_name, name, updated_at, hours, has_job_json)
        if closed:
            counts["partial" if has_job_json else "abandoned"] += 1
    return counts


def _close_idle_job(
    ctx: IngestContext,
    place: JobPlace,
    domain_name: str,
    name: str,
    seen: datetime,
    hours: int,
    has_job_json: bool,
) -> bool:
    job_id = place.job_id
    with ctx.sessions() as session:
        if has_job_json:
            job = session.get(Job, job_id)
            if job is None or job.updated_at != seen or not mark_complete(session, job):
                return False
            record_audit(
                session, actor="worker", action="JobIdleClosed", target_type="Job", target=job_id,
                domain=domain_name, outcome=SUCCESS,
                detail={"idle_hours": hours, "then": "ingest as partial"},
            )  # fmt: skip
            session.commit()
            log.info("job %s: no upload for %d h, ingesting what it uploaded as partial", job_id, hours)
            if ctx.enqueue is not None:
                ctx.enqueue(INGEST_JOB, job_id)
            return True
        reason = (
            f"No upload for {hours} h and the run never completed, with no job.json to ingest: "
            "its training process probably died; start a new job"
        )
        if not transition(
            session, job_id, JobStatus.InProgress, JobStatus.Failed, claimed_at=seen, failure_reason=reason
        ):
            return False
        session.commit()
    try:  # for the profiler app, which reads storage alone
        put_status(ctx.store, place, name, JobStatus.Failed, reason)
    except (Unavailable, OSError):
        log.warning("job %s: Failed, but its status.json could not be written", job_id, exc_info=True)
    return True


__all__ = ["close_idle_jobs", "reconcile_jobs"]
