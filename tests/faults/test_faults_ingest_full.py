"""Storage full while ingest writes ``processed/`` (the raw files fit): the job is Failed at once
with that reason, parsed once, never retried into "the worker ingesting this job died", and the
worker says so in its log. On a real 4 MiB tmpfs under the local store through a real Celery
worker (root only, as CI runs), and with an S3 endpoint answering MinIO's ``XMinioStorageFull``.
Storage that keeps failing otherwise is retried, and once the retries are spent the job is Failed
with that failure, not left to be taken for a dead worker's."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest

from profilerhub_core.db.models import JobStatus
from profilerhub_core.errors import Unavailable
from profilerhub_core.storage import LocalStore
from profilerhub_core.storage.s3 import S3Store
from profilerhub_core.tasks import INGEST_JOB
from profilerhub_worker.ingest import IngestContext, ingest_job
from profilerhub_worker.ingest import run as ingest_run
from tests.faults.faults import assert_settled, fill
from tests.support.hub import wait_for
from tests.support.jobs import ingest_worker, job_row, make_job, sdk_files


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each parse of a job's raw files (what every retry used to redo)."""
    parses: list[str] = []
    real = ingest_run.build_summary

    def counted(ctx: IngestContext, place: Any, *args: Any, **kwargs: Any) -> Any:
        parses.append(place.job_id)
        return real(ctx, place, *args, **kwargs)

    monkeypatch.setattr(ingest_run, "build_summary", counted)
    return parses


def test_a_full_disk_during_ingest_fails_the_job_at_once_saying_so(
    ctx: IngestContext, small_disk: Path, redis_url: str, hub_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = dataclasses.replace(ctx, store=LocalStore(small_disk))
    job_id, place = make_job(full, sdk_files())  # the raw files fit...
    fill(small_disk)  # ...what ingest writes does not
    parses = _count_parses(monkeypatch)
    with ingest_worker(full, redis_url, monkeypatch) as app:
        app.send_task(INGEST_JOB, args=[job_id])
        # Before the fix: Processing for ~26 minutes of retries, each parsing the trace again.
        wait_for(lambda: job_row(full, job_id).status is JobStatus.Failed, "the job Failed", 60)
    row = job_row(full, job_id)
    reason = row.failure_reason or ""
    assert reason.startswith("Storage is full") and "No space left on device" in reason, reason
    assert "died" not in reason and row.ingest_takeovers == 0, reason
    assert parses == [job_id]  # parsed once, not once per retry
    assert not any(full.store.list(place.processed_prefix)) or [
        info.key for info in full.store.list(place.processed_prefix)
    ] == [place.processed_key("status.json")]  # nothing half-written besides the outcome
    assert [info.key.rsplit("/", 1)[-1] for info in full.store.list(place.raw_prefix)]  # raw kept
    assert_settled(hub_db_url)


class _StorageFullOnProcessedWrites:
    """Makes an S3 client's PutObject of ``processed/`` keys answer what MinIO answers when its
    drives are full (507 ``XMinioStorageFull``), as a real HTTP response botocore parses."""

    BODY = (
        b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>XMinioStorageFull</Code><Message>Storage '
        b"backend has reached its minimum free drive threshold. Please delete a few objects to "
        b"proceed.</Message></Error>"
    )

    def __init__(self) -> None:
        self.refused = 0

    def __call__(self, request: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        if request.method != "PUT" or "/processed/" not in request.url:
            return None  # sent to the server as usual
        self.refused += 1
        return AWSResponse(request.url, 507, {"Content-Type": "application/xml"}, _Raw(self.BODY))


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, *_: Any, **__: Any) -> Any:
        yield self.body


def test_s3_answering_storage_full_during_ingest_fails_the_job_at_once(
    ctx: IngestContext,
    s3_server: dict[str, str],
    s3_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = S3Store(
        s3_bucket,
        "ph",
        endpoint_url=s3_server["endpoint_url"],
        region=s3_server["region"],
        aws_access_key_id=s3_server["access_key"],
        aws_secret_access_key=s3_server["secret_key"],
    )
    full = dataclasses.replace(ctx, store=store)
    job_id, _ = make_job(full, sdk_files())
    refuse = _StorageFullOnProcessedWrites()
    store._client.meta.events.register_first("before-send.s3.PutObject", refuse)
    parses = _count_parses(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="profilerhub_worker.ingest"):
        assert ingest_job(job_id, full) == "Failed"  # not IngestInterrupted: nothing to retry
    store.close()
    reason = job_row(full, job_id).failure_reason or ""
    assert reason.startswith("Storage is full") and "XMinioStorageFull" in reason, reason
    assert refuse.refused >= 1 and parses == [job_id]
    assert any(f"job {job_id} failed: Storage is full" in r.getMessage() for r in caplog.records), caplog.text


class _ProcessedWritesUnavailable:
    """A local store whose writes under ``processed/`` fail as an unreachable store's do (503)."""

    def __init__(self, store: LocalStore) -> None:
        self._store = store
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def put(self, key: str, data: bytes) -> int:
        if "/processed/" in f"/{key}":
            self.refused += 1
            raise Unavailable(
                "S3 at http://s3.example answered SlowDown for bucket 'traces': reduce your request rate"
            )
        return self._store.put(key, data)


def test_storage_failing_through_every_retry_fails_the_job_saying_so_not_a_dead_worker(
    ctx: IngestContext, redis_url: str, hub_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    flaky = _ProcessedWritesUnavailable(ctx.store)  # type: ignore[arg-type]
    failing = dataclasses.replace(ctx, store=flaky)  # type: ignore[arg-type]
    job_id, _ = make_job(failing, sdk_files())
    with ingest_worker(failing, redis_url, monkeypatch) as app:
        monkeypatch.setattr(app.tasks[INGEST_JOB], "max_retries", 1)  # one retry (after 1 s), then give up
        app.send_task(INGEST_JOB, args=[job_id])
        # Before the fix: the task's retries ran out, its claim lapsed, and the reconciler took the
        # job over as a dead worker's, ten times, ending "the worker ingesting this job died".
        wait_for(lambda: job_row(failing, job_id).status is JobStatus.Failed, "the job Failed", 60)
    row = job_row(failing, job_id)
    reason = row.failure_reason or ""
    assert reason.startswith("Ingest was interrupted 2 times in a row") and "SlowDown" in reason, reason
    assert "died" not in reason and row.ingest_takeovers == 0 and flaky.refused == 2
    assert_settled(hub_db_url)
