"""Helpers for the job tests: SDK-shaped raw files (the layout and record fields
``profilerhub._run`` writes) and jobs made through the model functions."""

from __future__ import annotations

import gzip
import json
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from profilerhub_app.hub import HttpHub
from profilerhub_app.main import create_app
from profilerhub_app.settings import AppServiceSettings
from profilerhub_core.apptokens import hub_signing_key, issue_app_token, public_key_pem
from profilerhub_core.db.models import AppType
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.records import apps, domains, jobs, users
from profilerhub_core.tasks import queues_of
from profilerhub_worker.ingest import IngestContext


def jsonl_gz(records: list[dict[str, Any]]) -> bytes:
    return gzip.compress(("\n".join(json.dumps(r) for r in records) + "\n").encode())


def cpu_chunk(first: int, n: int, cpu: float, t0: int = 1_000_000_000_000) -> bytes:
    """A ``system/`` chunk: samples ``first`` .. ``first + n`` at 100 ms, CPU ``cpu`` %, GPU 0 at 2 %."""
    return jsonl_gz(
        [{"ts_ns": t0 + (first + i) * 100_000_000, "cpu_percent": cpu,
          "gpus": [{"index": 0, "util_percent": 2.0}]} for i in range(n)]
    )  # fmt: skip


def sdk_files(steps: int = 5, t0: int = 1_000_000_000_000) -> dict[str, bytes]:
    """A small SDK run: job.json, annotations with steps, two metrics, system samples."""
    ms = 1_000_000
    annotations: list[dict[str, Any]] = []
    metrics: list[dict[str, Any]] = []
    system: list[dict[str, Any]] = []
    for i in range(steps):
        s = t0 + i * 20 * ms
        annotations.append(
            {
                "kind": "annotation",
                "name": "forward",
                "start_ns": s + ms,
                "end_ns": s + 6 * ms,
                "thread": 1,
                "thread_name": "MainThread",
                "depth": 1,
                "step": i,
            }
        )
        annotations.append(
            {
                "kind": "annotation",
                "name": "backward",
                "start_ns": s + 7 * ms,
                "end_ns": s + 17 * ms,
                "thread": 1,
                "thread_name": "MainThread",
                "depth": 1,
                "step": i,
            }
        )
        annotations.append(
            {
                "kind": "step",
                "name": f"step_{i}",
                "start_ns": s,
                "end_ns": s + (18 + i) * ms,
                "thread": 1,
                "thread_name": "MainThread",
                "depth": 0,
                "step": i,
            }
        )
        metrics.append(
            {
                "name": "train:loss",
                "value": 2.0 / (i + 1),
                "step": i,
                "ts_ns": s + 18 * ms,
                "source": "log_metric",
            }
        )
        system.append(
            {
                "ts_ns": s,
                "cpu_percent": 10.0 * i,
                "cpu_percent_per_core": [5.0, 15.0 * i],
                "mem_used_bytes": 1000 + i,
                "mem_total_bytes": 4000,
                "mem_percent": 25.0,
            }
        )
    metrics.append(
        {"name": "train:acc", "value": None, "nonfinite": "nan", "step": 0, "ts_ns": t0, "source": "stdout"}
    )
    job = {
        "format": "profilerhub-raw/1",
        "job": "demo",
        "status": "Completed",
        "host": "h",
        "pid": 1,
        "start_ns": t0,
        "end_ns": t0 + steps * 20 * ms,
        "sdk_version": "0.1.0",
    }
    return {
        "job.json": json.dumps(job).encode(),
        "annotations/000001.jsonl.gz": jsonl_gz(annotations),
        "metrics/000001.jsonl.gz": jsonl_gz(metrics),
        "system/000001.jsonl.gz": jsonl_gz(system),
        "_SUCCESS": b"{}",
    }


def stalled_sdk_files() -> dict[str, bytes]:
    """An SDK run whose 'dataloader' annotation stalls once (500 ms against 2 ms)."""
    files = sdk_files(steps=30)
    t0, ms = 1_000_000_000_000, 1_000_000
    fetches = [
        {"kind": "annotation", "name": "dataloader", "start_ns": t0 + i * 20 * ms, "thread": 1,
         "end_ns": t0 + i * 20 * ms + (500 if i == 20 else 2) * ms, "depth": 1, "step": i}
        for i in range(30)
    ]  # fmt: skip
    files["annotations/000002.jsonl.gz"] = jsonl_gz(fetches)
    return files


def make_job(
    ctx: IngestContext, files: dict[str, bytes], *, complete: bool = True, user: str = "alice"
) -> tuple[str, JobPlace]:
    """A job of d1/alice with ``files`` under raw/, completed like the hub's complete route does."""
    with ctx.sessions() as session:
        domain = domains.require_domain(session, "d1")
        owner = users.get_user(session, domain, user)
        assert owner is not None
        job = jobs.create_job(session, domain, owner, "demo")
        if complete:
            jobs.mark_complete(session, job)
        session.commit()
        job_id, place = job.id, JobPlace(domain.id, owner.id, job.id)
    for name, data in files.items():
        ctx.store.put(place.raw_key(name), data)
    return job_id, place


@contextmanager
def ingest_worker(ctx: IngestContext, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A real Celery worker (solo pool, in a thread) on a queue of its own in the real Redis, whose
    ingest context is ``ctx``; yields its Celery app (``app.send_task(INGEST_JOB, args=[job_id])``)."""
    from celery.contrib.testing.worker import start_worker

    from profilerhub_worker.celery_app import make_celery
    from profilerhub_worker.runtime import runtime_of

    queue = f"phtest-ingest-{uuid.uuid4().hex[:10]}"
    app = make_celery(redis_url, queue=queue)
    runtime_of(app).ingest = ctx
    # start_worker sets the root logger's level for the whole process; later tests need it back.
    monkeypatch.setattr(logging.getLogger(), "level", logging.getLogger().level)
    queues = queues_of(queue)  # the app queue and the ingest queue
    with start_worker(app, pool="solo", perform_ping_check=False, queues=queues, shutdown_timeout=10):
        yield app


@contextmanager
def pooled_ingest_worker(
    ctx: IngestContext, redis_url: str, monkeypatch: pytest.MonkeyPatch, slots: int = 2
) -> Iterator[Any]:
    """A real Celery worker with ``slots`` task slots (threads pool) on a queue of its own in the
    real Redis, whose ingest context is ``ctx``, sending its tasks (fanned-out traces, waiting jobs)
    there; yields its Celery app."""
    from celery.contrib.testing.worker import start_worker

    from profilerhub_worker.celery_app import make_celery
    from profilerhub_worker.runtime import runtime_of

    queue = f"phtest-pool-{uuid.uuid4().hex[:10]}"
    app = make_celery(redis_url, queue=queue)
    ctx.enqueue = lambda name, *args: app.send_task(name, args=list(args))
    runtime_of(app).ingest = ctx
    monkeypatch.setattr(logging.getLogger(), "level", logging.getLogger().level)
    with start_worker(
        app,
        pool="threads",
        concurrency=slots,
        perform_ping_check=False,
        queues=queues_of(queue),
        shutdown_timeout=20,
    ):
        yield app


def job_prefix(hub: Any, job_id: str) -> str:
    """The job's folder in the hub's store: ``{domain_id}/{user_id}/jobs/{job_id}/``."""
    from profilerhub_core.db.models import Job
    from profilerhub_core.jobstorage import place_of

    with hub.state.services.sessions() as session:
        job = session.get(Job, job_id)
        assert job is not None
        return place_of(job).prefix


def job_row(ctx: IngestContext, job_id: str) -> Any:
    """The job's row as it is now (detached)."""
    from profilerhub_core.db.models import Job

    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job


def open_app(
    ctx: IngestContext, jobs_hub: Any, jobs_client: TestClient, store: Path, user: str, domain: str = "d1"
) -> TestClient:
    """A profiler app of ``user`` (a Pending app row, as the hub creates one) and its client."""
    with ctx.sessions() as session:
        domain_row = domains.require_domain(session, domain)
        owner = users.get_user(session, domain_row, user)
        assert owner is not None
        app_id = apps.create_user_app(session, domain_row, owner, AppType.DetailedProfiler, "default").id
        owner_id = owner.id
        session.commit()
    key = hub_signing_key(jobs_hub.state.services.settings)
    settings = AppServiceSettings(
        id=app_id,
        owner=user,
        owner_id=owner_id,
        domain=domain,
        public_key=public_key_pem(key),
        storage_url=store.as_uri(),
        cache_dir=str(store.parent / f"app-cache-{user}"),
    )
    headers = {"Authorization": f"Bearer {issue_app_token(key, app_id, owner_id)}"}
    hub = HttpHub("http://testserver", app_id, client=jobs_client)
    return TestClient(create_app(settings, hub=hub), headers=headers, base_url=f"http://app/apps/{app_id}/")


def ingested_job(ctx: IngestContext, shared_dir: Path, *traces: str) -> str:
    """A job of the shared ``traces`` (paths under ``../shared``), ingested to Ready; its id."""
    from profilerhub_worker.ingest import ingest_job

    files = {f"torch/{Path(t).name}": (shared_dir / t).read_bytes() for t in traces}
    job_id, _ = make_job(ctx, files)
    assert ingest_job(job_id, ctx) == "Ready"
    return job_id


def analyze_cli(shared_dir: Path, trace: str) -> dict[str, Any]:
    """``profilerhub analyze --format json`` of a shared trace, run as the CLI a user would."""
    import subprocess
    import sys

    cli = Path(sys.executable).parent / "profilerhub"
    done = subprocess.run(
        [str(cli), "analyze", str(shared_dir / trace), "--format", "json"], capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]
