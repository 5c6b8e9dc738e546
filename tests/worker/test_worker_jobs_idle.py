"""Jobs left uploading by a run that died (never completed) are closed by the reconciler after their
domain's ``job_idle_hours``: ingested as partial when a job.json was uploaded, else Failed."""

from __future__ import annotations

import json
from datetime import timedelta

import sqlalchemy as sa

from profilerhub_core.db.models import Domain, Job, JobStatus, utcnow
from profilerhub_core.storage.layout import STATUS
from profilerhub_core.tasks import INGEST_JOB
from profilerhub_worker.ingest import IngestContext, ingest_job, reconcile_jobs
from tests.support.jobs import make_job, sdk_files

NOTHING = {"resent": 0, "partial": 0, "abandoned": 0}


def died_mid_run() -> dict[str, bytes]:
    """What the SDK has uploaded when its process is killed: job.json still says InProgress."""
    files = sdk_files(steps=3)
    doc = json.loads(files["job.json"]) | {"status": "InProgress"}
    del doc["end_ns"]
    files.pop("_SUCCESS")
    return files | {"job.json": json.dumps(doc).encode()}


def job_row(ctx: IngestContext, job_id: str) -> Job:
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job


def test_a_dead_run_with_job_json_is_ingested_as_partial_after_the_idle_hours(ctx: IngestContext) -> None:
    job_id, _ = make_job(ctx, died_mid_run(), complete=False)
    assert reconcile_jobs(ctx, now=utcnow() + timedelta(hours=23)) == NOTHING  # default: 24 h
    assert job_row(ctx, job_id).status is JobStatus.InProgress

    assert reconcile_jobs(ctx, now=utcnow() + timedelta(hours=25)) == NOTHING | {"partial": 1}
    assert ctx.sent == [(INGEST_JOB, job_id)]  # type: ignore[attr-defined]
    assert job_row(ctx, job_id).completed_at is not None
    assert ingest_job(job_id, ctx) == "Ready"
    summary = job_row(ctx, job_id).summary or {}
    assert summary["partial"] is True and summary["steps"]["count"] == 3


def test_a_finished_run_is_not_partial(ctx: IngestContext) -> None:
    job_id, _ = make_job(ctx, sdk_files())
    assert ingest_job(job_id, ctx) == "Ready"
    assert (job_row(ctx, job_id).summary or {})["partial"] is False


def test_a_dead_run_without_job_json_fails_with_a_reason_the_app_sees_too(ctx: IngestContext) -> None:
    files = sdk_files()
    del files["job.json"]
    job_id, place = make_job(ctx, files, complete=False)
    empty_id, _ = make_job(ctx, {}, complete=False)  # registered, then killed before any upload

    assert reconcile_jobs(ctx, now=utcnow() + timedelta(hours=25)) == NOTHING | {"abandoned": 2}
    assert ctx.sent == []  # type: ignore[attr-defined]
    for failed in (job_id, empty_id):
        row = job_row(ctx, failed)
        assert row.status is JobStatus.Failed
        reason = row.failure_reason or ""
        assert "No upload for 24 h" in reason and "no job.json" in reason
    status = json.loads(ctx.store.get(place.processed_key(STATUS)))
    assert status["status"] == "Failed" and status["failure_reason"] == job_row(ctx, job_id).failure_reason


def test_a_recent_upload_keeps_an_old_job_open(ctx: IngestContext) -> None:
    """Uploads straight to S3 never touch the row: the newest raw object counts as activity."""
    job_id, _ = make_job(ctx, died_mid_run(), complete=False)
    with ctx.sessions() as session:
        old = utcnow() - timedelta(hours=48)
        session.execute(sa.update(Job).where(Job.id == job_id).values(updated_at=old))
        session.commit()
    assert reconcile_jobs(ctx) == NOTHING
    assert job_row(ctx, job_id).status is JobStatus.InProgress


def test_the_domain_sets_the_idle_hours_and_zero_keeps_jobs_open(ctx: IngestContext) -> None:
    job_id, _ = make_job(ctx, {}, complete=False)
    for hours, expected in ((0, NOTHING), (1, NOTHING | {"abandoned": 1})):
        with ctx.sessions() as session:
            stmt = sa.update(Domain).where(Domain.name == "d1").values(settings={"job_idle_hours": hours})
            session.execute(stmt)
            session.commit()
        assert reconcile_jobs(ctx, now=utcnow() + timedelta(hours=2)) == expected
    assert "No upload for 1 h" in (job_row(ctx, job_id).failure_reason or "")
