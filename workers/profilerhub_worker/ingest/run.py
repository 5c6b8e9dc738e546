"""``ingest_job(job_id, ctx)``: claim a completed job, turn its raw files into processed ones, finish it.

    claim     InProgress (completed) -> Processing, by compare-and-set: a duplicate or late task
              finds nothing to claim and does nothing. A Processing job whose claim is older than
              ``ctx.stale_after`` (its worker died) is reclaimed (Processing -> Processing), or
              Failed once it has been tried ``ctx.max_attempts`` times.
    read      every object under ``raw/`` is streamed to a private temporary directory and
              checked: a file over the size limit, truncated gzip, bad JSON or a trace the
              analysis engine cannot read ends the job Failed with a reason naming the file.
    write     ``processed/`` is emptied, then each trace's event store (Parquet) goes to
              ``processed/traces/<n>-<name>/`` and the summary to ``processed/summary.json``.
    finish    Processing -> Ready with a compact summary on the row (compare-and-set on the
              claim, so a worker that lost its claim changes nothing).

A storage or database failure raises ``IngestInterrupted`` carrying the claim, and the Celery
task retries with it (``claim=``), taking its own claim back. Running the whole thing twice
writes the same objects: it is idempotent.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import orjson
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from profilerhub_analysis.build import load_trace
from profilerhub_analysis.errors import TraceError
from profilerhub_analysis.reader import max_trace_bytes
from profilerhub_analysis.store import EventStore
from profilerhub_core.db.models import AuditEvent, Domain, Job, JobStatus, utcnow
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import InvalidInput, NotFound, Unavailable
from profilerhub_core.jobstorage import STATUS, SUMMARY, JobPlace, place_of
from profilerhub_core.records.audit import SUCCESS, record_audit
from profilerhub_core.records.job_states import transition
from profilerhub_core.records.jobs import mark_complete
from profilerhub_core.storage import ObjectStore, layout
from profilerhub_core.tasks import INGEST_JOB
from profilerhub_worker.ingest import summary as sm

log = logging.getLogger(__name__)

SUMMARY_FORMAT = "profilerhub-summary/1"
CHUNK_KINDS = ("annotations", "metrics", "system")
TRACE_SUFFIXES = (".json", ".json.gz")
_ANNOTATIONS = msgspec.json.Decoder(sm.AnnotationRecord)
_METRICS = msgspec.json.Decoder(sm.MetricRecord)
_SAMPLES = msgspec.json.Decoder(sm.SystemSample)


@dataclass
class IngestContext:
    """What ingest needs: the database, the object store and the limits. One per worker process."""

    sessions: sessionmaker[Session]
    store: ObjectStore
    max_file_bytes: int
    max_trace_bytes: int
    stale_after: timedelta
    max_attempts: int = 3
    resend_after: timedelta = timedelta(seconds=30)
    enqueue: Callable[[str, str], None] | None = None
    """``enqueue(task_name, job_id)``; what the reconciler re-sends stuck jobs with."""

    @classmethod
    def from_settings(
        cls, settings: Any, store: ObjectStore, enqueue: Callable[[str, str], None] | None = None
    ) -> IngestContext:
        from profilerhub_core.db.session import make_engine, session_factory

        return cls(
            sessions=session_factory(make_engine(settings)),
            store=store,
            max_file_bytes=settings.job_max_file_bytes,
            max_trace_bytes=max_trace_bytes(),
            stale_after=timedelta(seconds=settings.job_ingest_timeout_seconds),
            max_attempts=settings.job_ingest_max_attempts,
            enqueue=enqueue,
        )


class BadUpload(Exception):
    """A raw file that cannot be ingested; ``message`` names it and becomes the failure reason."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class IngestInterrupted(Exception):
    """Storage or the database failed mid-ingest; retry with ``claim`` to take the job back."""

    def __init__(self, claim: str, cause: Exception) -> None:
        super().__init__(f"ingest interrupted ({type(cause).__name__}: {cause}); retry with the claim")
        self.claim = claim


# -- claiming ----------------------------------------------------------------------------------


def _attempts(session: Session, job_id: str) -> int:
    stmt = sa.select(sa.func.count()).where(
        AuditEvent.target_type == "Job", AuditEvent.target == job_id, AuditEvent.action == "JobProcessing"
    )
    return session.scalar(stmt) or 0


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
            if resume is None and _attempts(session, job_id) >= ctx.max_attempts:
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


def _finish(ctx: IngestContext, job_id: str, stamp: datetime, to: JobStatus, **fields: Any) -> bool:
    with ctx.sessions() as session:
        moved = transition(session, job_id, JobStatus.Processing, to, claimed_at=stamp, **fields)
        session.commit()
    return moved


# -- the task's work -----------------------------------------------------------------------------


def ingest_job(job_id: str, ctx: IngestContext, claim_stamp: str | None = None) -> str:
    """Ingest one job; returns what happened: ``Ready``, ``Failed``, ``skipped`` or ``lost``.

    Raises ``IngestInterrupted`` when storage or the database fails part-way (retry it).
    """
    stamp = claim(ctx, job_id, resume=claim_stamp)
    if stamp is None:
        return "skipped"
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        assert job is not None
        place = place_of(job)
        start: dict[str, Any] = {"name": job.name, "metric_definitions": list(job.metric_definitions or [])}
    try:
        ctx.store.delete_prefix(place.processed_prefix)  # a re-run starts from nothing
        summary = build_summary(
            ctx, place, start, lambda folder, es: _put_store(ctx.store, place, folder, es)
        )
        body = orjson.dumps(summary, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
        ctx.store.put(place.processed_key(SUMMARY), body)
        _put_status(ctx.store, place, start["name"], JobStatus.Ready)
    except BadUpload as bad:
        log.info("job %s failed: %s", job_id, bad.message)
        try:
            ctx.store.delete_prefix(place.processed_prefix)
            _put_status(ctx.store, place, start["name"], JobStatus.Failed, bad.message)
        except (Unavailable, OSError) as exc:
            raise IngestInterrupted(stamp.isoformat(), exc) from exc
        failed = _finish(ctx, job_id, stamp, JobStatus.Failed, failure_reason=bad.message)
        return "Failed" if failed else "lost"
    except (Unavailable, OperationalError, OSError) as exc:
        raise IngestInterrupted(stamp.isoformat(), exc) from exc
    compact = _plain(sm.compact(summary))
    return "Ready" if _finish(ctx, job_id, stamp, JobStatus.Ready, summary=compact) else "lost"


def _put_status(store: ObjectStore, place: JobPlace, name: str, status: JobStatus, reason: str = "") -> None:
    """``processed/status.json``: the outcome, for readers of storage alone (the profiler app)."""
    doc = {
        "job_id": place.job_id,
        "name": name,
        "status": status.value,
        "failure_reason": reason or None,
        "finished_at": utcnow().isoformat(),
    }
    store.put(place.processed_key(STATUS), orjson.dumps(doc))


def _plain(value: Any) -> Any:
    """JSON-ready plain Python (numpy scalars and arrays become numbers and lists; NaN -> null)."""
    return orjson.loads(orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS))


def _kind(rel: str) -> str:
    top = rel.split("/", 1)[0]
    if rel == "job.json":
        return "job"
    if top in CHUNK_KINDS and "/" in rel and rel.endswith(".jsonl.gz"):
        return top
    if rel.endswith(TRACE_SUFFIXES) and top not in CHUNK_KINDS:
        return "trace"
    return "other"


def _reason(rel: str, exc: Exception) -> str:
    text = getattr(exc, "message", None) or str(exc)
    name = rel.rsplit("/", 1)[-1]
    text = text.removeprefix(f"{name}: ")
    return f"raw/{rel}: {text}"


def _fetch(store: ObjectStore, key: str, target: Path) -> None:
    with target.open("wb") as fh:
        for chunk in store.stream(key):
            fh.write(chunk)


def build_summary(
    ctx: IngestContext, place: JobPlace, job: dict[str, Any], save: Callable[[str, EventStore], None]
) -> dict[str, Any]:
    """Read and check every raw file and return the summary; each trace's event store is handed
    to ``save(folder, store)`` as soon as it is built (so one trace at a time is in memory).

    Raises ``BadUpload`` naming the first file that cannot be ingested.
    """
    objects = list(ctx.store.list(place.raw_prefix))
    if not objects:
        raise BadUpload("No raw files were uploaded for this job")
    files: dict[str, list[str]] = {}
    annotations: list[sm.AnnotationRecord] = []
    metrics: list[sm.MetricRecord] = []
    samples: list[sm.SystemSample] = []
    job_doc: dict[str, Any] = {}
    traces: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="profilerhub-ingest-") as tmp:
        for info in objects:
            rel = layout.relative_name(info.key, place.raw_prefix)
            kind = _kind(rel)
            files.setdefault(kind, []).append(rel)
            if kind == "other":
                continue
            if info.size > ctx.max_file_bytes:
                raise BadUpload(
                    f"raw/{rel}: {info.size} bytes is over the per-file limit of {ctx.max_file_bytes}"
                )
            try:
                if kind == "trace":
                    # Traces go through a file: the reader streams and caps the decompression.
                    local = Path(tmp) / rel.rsplit("/", 1)[-1]  # the reader's messages name the file
                    _fetch(ctx.store, info.key, local)
                    try:
                        store = load_trace(local, ctx.max_trace_bytes)
                    finally:
                        local.unlink(missing_ok=True)
                    folder = f"traces/{len(traces)}-{_safe(rel)}"
                    save(folder, store)
                    traces.append(sm.trace_summary(rel, store) | {"event_store": f"processed/{folder}/"})
                    continue
                data = ctx.store.get(info.key)  # small: job.json and the SDK's chunks
                if kind == "job":
                    job_doc = _job_doc(data)
                    continue
                data = gunzip(data, ctx.max_trace_bytes)
                if kind == "annotations":
                    annotations.extend(_ANNOTATIONS.decode_lines(data))
                elif kind == "metrics":
                    metrics.extend(_METRICS.decode_lines(data))
                else:
                    samples.extend(_SAMPLES.decode_lines(data))
            except (TraceError, msgspec.MsgspecError, ValueError) as exc:
                raise BadUpload(_reason(rel, exc)) from exc
    steps, annotated = sm.steps_and_annotations(annotations)
    start_ns = job_doc.get("start_ns") if isinstance(job_doc.get("start_ns"), int) else None
    summary = {
        "format": SUMMARY_FORMAT,
        # The SDK rewrites job.json as Completed in finish(); still InProgress: the run died.
        "partial": job_doc.get("status") == "InProgress",
        "job": _job_section(job, job_doc),
        "files": {kind: len(names) for kind, names in sorted(files.items())},
        "ignored_files": files.get("other", [])[:100],
        "steps": steps,
        "annotations": annotated,
        "metrics": sm.training_metrics(metrics),
        "system": sm.system_metrics(samples, start_ns),
        "traces": traces,
    }
    return summary


def gunzip(data: bytes, limit: int) -> bytes:
    """Decompress a whole gzip member (``ValueError`` when it is not gzip, truncated or over ``limit``)."""
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise ValueError(f"not a valid gzip file ({exc})") from exc
    if len(out) > limit:
        raise ValueError(f"larger than the {limit} byte limit once decompressed")
    if not inflater.eof:
        raise ValueError("gzip data is truncated (the file ended early)")
    return out


def _job_doc(data: bytes) -> dict[str, Any]:
    doc = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object; the SDK writes job.json as one")
    return doc


def _job_section(job: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "host",
        "pid",
        "rank",
        "world_size",
        "sdk_version",
        "python",
        "torch_version",
        "start_ns",
        "end_ns",
    )
    out = {"name": job["name"], "metric_definitions": job["metric_definitions"]}
    out.update({k: doc.get(k) for k in keep if k in doc})
    start, end = doc.get("start_ns"), doc.get("end_ns")
    if isinstance(start, int) and isinstance(end, int):
        out["duration_s"] = round((end - start) / 1e9, 3)
    if isinstance(doc.get("dropped"), dict):
        out["sdk_dropped"] = doc["dropped"]
    return out


def _safe(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    for suffix in (".json.gz", ".json"):
        name = name.removesuffix(suffix)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:100] or "trace"


def _put_store(store: ObjectStore, place: JobPlace, folder: str, event_store: EventStore) -> None:
    for name, data in event_store.to_files().items():
        store.put(place.processed_key(f"{folder}/{name}"), data)


# -- the reconciler ----------------------------------------------------------------------------


def reconcile_jobs(ctx: IngestContext, now: datetime | None = None) -> dict[str, int]:
    """Re-send ingest for completed jobs nobody claimed and for Processing jobs whose claim is
    stale, then close jobs left uploading by a dead run (``close_idle_jobs``)."""
    now = now or utcnow()
    counts = {"resent": 0}
    if ctx.enqueue is not None:
        with ctx.sessions() as session:
            waiting = sa.select(Job.id).where(
                Job.status == JobStatus.InProgress,
                Job.completed_at.is_not(None),
                Job.completed_at < now - ctx.resend_after,
            )
            stale = sa.select(Job.id).where(
                Job.status == JobStatus.Processing, Job.updated_at < now - ctx.stale_after
            )
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
        _put_status(ctx.store, place, name, JobStatus.Failed, reason)
    except (Unavailable, OSError):
        log.warning("job %s: Failed, but its status.json could not be written", job_id, exc_info=True)
    return True


def read_summary(store: ObjectStore, place: JobPlace) -> bytes:
    """The stored ``processed/summary.json`` of a job (``NotFound`` before ingest wrote it)."""
    try:
        return store.get(place.processed_key(SUMMARY))
    except InvalidInput as exc:  # an id that cannot be a key cannot have a summary either
        raise NotFound(exc.message) from exc


__all__ = [
    "BadUpload",
    "IngestContext",
    "IngestInterrupted",
    "build_summary",
    "claim",
    "close_idle_jobs",
    "ingest_job",
    "read_summary",
    "reconcile_jobs",
]
