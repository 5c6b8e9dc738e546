"""``ingest_job(job_id, ctx)``: claim a completed job, turn its raw files into processed ones, finish it.

    claim     InProgress (completed) -> Processing, by compare-and-set: a duplicate or late task
              finds nothing to claim and does nothing; a job whose owner has their share of
              ingests running waits (``waiting``) and is sent again when one of them ends. A
              Processing job whose claim is older than ``ctx.stale_after`` (its worker died) is
              reclaimed (Processing -> Processing), or Failed once it has been tried
              ``ctx.max_attempts`` times.
    read      every object under ``raw/`` is inflated to a private temporary directory (capped
              as it streams) and parsed under the worker's memory budget (``limits``): a file
              over a limit, truncated gzip, bad or too deep JSON or a trace the analysis engine
              cannot read is left out with a warning naming it; with nothing readable at all
              the job is Failed with the first file's reason.
    write     ``processed/`` is emptied, then each trace's views (``views``) go to
              ``processed/traces/<n>-<name>/`` and the summary, rules and status to
              ``processed/`` (``write``; every name in ``profilerhub_core.storage.layout``).
    finish    Processing -> Ready with a compact summary and the list's figures (duration, steps,
              GPUs, ranks: ``summary.job_facts``) on the row (compare-and-set on the claim, so a
              worker that lost its claim changes nothing).
    act       webhooks of rules newly IssuesFound in the final evaluation and of the job's end
              (``actions``).

A storage or database failure raises ``IngestInterrupted`` carrying the claim, and the Celery
task retries with it (``claim=``), taking its own claim back. Storage that is full (``StorageFull``:
a full disk or quota under the store, S3's 507; or ``ENOSPC`` in the worker's own temporary
folder) is not retried: every retry would parse the traces again only to fail at the same write,
so the job is Failed at once, saying so (``storage_full``). Running the whole thing twice
writes the same objects: it is idempotent. Each step is its own module: ``claim``, ``read``,
``write`` (and ``reconcile`` for the periodic task); this one runs them in order.
"""

from __future__ import annotations

import errno
import logging
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from profilerhub_core.db.models import Job, JobStatus
from profilerhub_core.errors import StorageFull, Unavailable
from profilerhub_core.jobstorage import JobPlace, place_of
from profilerhub_core.outage import report
from profilerhub_core.tasks import INGEST_JOB
from profilerhub_worker.ingest import summary as sm
from profilerhub_worker.ingest.actions import act_on_end, act_on_rules
from profilerhub_worker.ingest.claim import Heartbeat, UserAtLimit, claim, finish, heartbeat, next_of_user
from profilerhub_worker.ingest.context import BadUpload, IngestContext, IngestInterrupted
from profilerhub_worker.ingest.fanout import fan_out_here, join_traces
from profilerhub_worker.ingest.live_rules import refresh_peers
from profilerhub_worker.ingest.read import build_summary
from profilerhub_worker.ingest.rules import job_rules, stamped
from profilerhub_worker.ingest.views import put_tb_views, put_trace
from profilerhub_worker.ingest.write import plain, put_ranks, put_rules, put_status, put_summary

log = logging.getLogger("profilerhub_worker.ingest")


def ingest_job(job_id: str, ctx: IngestContext, claim_stamp: str | None = None) -> str:
    """Ingest one job; returns what happened: ``Ready``, ``Failed``, ``skipped``, ``waiting`` or ``lost``.

    Raises ``IngestInterrupted`` when storage or the database fails part-way (retry it).
    """
    try:
        stamp = claim(ctx, job_id, resume=claim_stamp)
    except UserAtLimit:
        log.info("job %s waits: its owner has %d jobs being ingested", job_id, ctx.jobs_per_user)
        return "waiting"
    if stamp is None:
        return "skipped"
    with heartbeat(ctx, job_id, stamp) as kept:  # a worker killed from here on is seen within seconds
        result = _ingest_claimed(job_id, ctx, stamp, kept)
    _start_waiting(ctx, job_id)
    return result


def _start_waiting(ctx: IngestContext, job_id: str) -> None:
    """Send ingest for the owner's jobs that waited for this one's share (``claim.UserAtLimit``)."""
    if ctx.enqueue is None or not ctx.jobs_per_user:
        return
    try:
        with ctx.sessions() as session:
            user_id = session.scalar(sa.select(Job.user_id).where(Job.id == job_id))
        for waiting in next_of_user(ctx, user_id) if user_id else []:
            ctx.enqueue(INGEST_JOB, waiting)
    except Exception as exc:  # the reconciler re-sends waiting jobs anyway
        if not report(exc):
            log.warning("job %s: the owner's waiting jobs not sent", job_id, exc_info=True)


def _ingest_claimed(job_id: str, ctx: IngestContext, stamp: datetime, kept: Heartbeat) -> str:
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        assert job is not None
        place = place_of(job)
        start: dict[str, Any] = {
            "name": job.name,
            "metric_definitions": list(job.metric_definitions or []),
            "rules": job_rules(session, job),
        }
        live_results = job.rule_results
    try:
        try:
            ctx.store.delete_prefix(place.processed_prefix)  # a re-run starts from nothing
            summary = build_summary(
                ctx,
                place,
                start,
                lambda folder, es, entry, notes: put_trace(ctx.store, place, folder, es, entry, notes),
                save_views=lambda folder, entry, path, size: put_tb_views(
                    ctx.store, place, folder, entry, path, size
                ),
                parsing=kept.parsing,
                fan_out=(
                    (lambda traces, notes: join_traces(ctx, place, stamp, traces, notes, kept.parsing))
                    if fan_out_here(ctx)
                    else None
                ),
            )
            put_ranks(ctx.store, place, summary)
            put_summary(ctx.store, place, summary)
            rule_results = stamped(plain(summary["rules"]))
            put_rules(ctx.store, place, rule_results)
            facts = sm.job_facts(summary)
            put_status(ctx.store, place, start["name"], JobStatus.Ready, facts=facts)
        except (BadUpload, Unavailable, OperationalError, OSError):
            raise
        except (Exception, RecursionError, MemoryError) as exc:  # a bug or a limit missed: never stuck
            log.exception("job %s: ingest failed unexpectedly", job_id)
            raise BadUpload(f"Ingest failed unexpectedly ({type(exc).__name__}: {str(exc)[:200]})") from exc
    except BadUpload as bad:
        log.info("job %s failed: %s", job_id, bad.message)
        try:
            ctx.store.delete_prefix(place.processed_prefix)
            put_status(ctx.store, place, start["name"], JobStatus.Failed, bad.message)
        except (Unavailable, OSError) as exc:
            raise IngestInterrupted(stamp.isoformat(), exc) from exc
        failed = finish(ctx, job_id, stamp, JobStatus.Failed, failure_reason=bad.message)
        if failed:
            _act(ctx, job_id, None)
        return "Failed" if failed else "lost"
    except (Unavailable, OperationalError, OSError) as exc:
        full = storage_full(exc)
        if full is None:
            raise IngestInterrupted(stamp.isoformat(), exc) from exc
        return _fail_for_space(ctx, job_id, place, start["name"], stamp, full)
    compact = plain(sm.compact(summary))
    # the list's figures on the row too, so the owner's job list sorts by them in SQL
    moved = finish(ctx, job_id, stamp, JobStatus.Ready, summary=compact, rule_results=rule_results, **facts)
    if moved:
        _act(ctx, job_id, (live_results, rule_results))
        refresh_peers(ctx, job_id, summary.get("job") or {}, rule_results, ended=True)  # a distributed run
    return "Ready" if moved else "lost"


def give_up(job_id: str, ctx: IngestContext, interrupted: IngestInterrupted, tries: int) -> str:
    """Fail a job whose ingest was interrupted ``tries`` times in a row (storage or the database
    kept failing), with the last failure as the reason: its claim must not just lapse, or the
    reconciler would take it over as if its worker had died. ``Failed``, or ``lost`` when the
    claim is gone (or the database does not answer: then the reconciler has it, as before)."""
    cause = interrupted.cause
    detail = cause.message if isinstance(cause, Unavailable) else f"{type(cause).__name__}: {cause}"
    reason = (
        f"Ingest was interrupted {tries} times in a row and is not retried again; the last time: {detail}"
    )
    try:
        stamp = claim(ctx, job_id, resume=interrupted.claim)
        if stamp is None:
            return "lost"
        log.warning("job %s failed: %s", job_id, reason)
        failed = finish(ctx, job_id, stamp, JobStatus.Failed, failure_reason=reason[:2000])
    except OperationalError:  # the database is down: the claim lapses and the reconciler has it
        return "lost"
    if failed:
        _act(ctx, job_id, None)
    return "Failed" if failed else "lost"


def storage_full(exc: BaseException) -> str | None:
    """The failure reason when ``exc`` means there is no space to write in, else None."""
    if isinstance(exc, StorageFull):
        return (
            f"Storage is full: ingest could not write the job's processed files ({exc.message}). "
            "The raw files are kept; free space in storage, then upload the job again"
        )
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        where = f" ({exc.filename})" if exc.filename else ""
        return (
            f"The ingest worker's temporary folder{where} is full ({exc.strerror}); free space there "
            "(or point TMPDIR at a larger disk), then upload the job again"
        )
    return None


def _fail_for_space(
    ctx: IngestContext, job_id: str, place: JobPlace, name: str, stamp: datetime, reason: str
) -> str:
    """Fail a job that storage has no room for, without retrying (``storage_full``)."""
    log.warning("job %s failed: %s", job_id, reason)
    try:  # what was written is useless now; removing it frees room for status.json
        ctx.store.delete_prefix(place.processed_prefix)
        put_status(ctx.store, place, name, JobStatus.Failed, reason)
    except (Unavailable, OSError) as exc:  # the row is the truth; status.json is the app's copy
        log.warning("job %s: Failed, but its status.json could not be written (%s)", job_id, exc)
    failed = finish(ctx, job_id, stamp, JobStatus.Failed, failure_reason=reason)
    if failed:
        _act(ctx, job_id, None)
    return "Failed" if failed else "lost"


def _act(ctx: IngestContext, job_id: str, rules: tuple[Any, dict[str, Any]] | None) -> None:
    """Webhooks for the final rules and the job's end; the job is finished whatever happens here."""
    try:
        if rules is not None:
            act_on_rules(ctx, job_id, *rules)
        act_on_end(ctx, job_id)
    except Exception as exc:
        if not report(exc):  # an outage is counted, not logged per job (``profilerhub_core.outage``)
            log.exception("job %s: webhook deliveries could not be recorded", job_id)


__all__ = ["give_up", "ingest_job", "storage_full"]
