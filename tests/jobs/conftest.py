"""Fixtures for the job tests: an in-process hub whose sent tasks are recorded, and helpers that
build SDK-shaped raw files (the same layout and record fields ``profilerhub._run`` writes)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.records import domains, jobs, users
from profilerhub_core.storage import LocalStore
from profilerhub_worker.ingest.run import IngestContext


@dataclass
class SentTasks:
    """Stands in for the hub's task sender: records ``(task_name, job_id)`` instead of sending."""

    sent: list[tuple[str, str]] = field(default_factory=list)

    def send(self, task_name: str, job_id: str) -> None:
        self.sent.append((task_name, job_id))


@pytest.fixture
def jobs_hub(hub_settings: Any) -> Iterator[Any]:
    """The hub on local storage under its home, limits small enough to test (1 MiB file, 2 MiB job)."""
    from profilerhub_core.db.session import make_engine
    from profilerhub_hub.app import create_app

    settings = hub_settings.model_copy(update={"job_max_file_bytes": 1 << 20, "job_max_total_bytes": 2 << 20})
    engine = make_engine(settings)
    app = create_app(settings, engine=engine)
    app.state.app_tasks = SentTasks()
    yield app
    engine.dispose()


@pytest.fixture
def jobs_client(jobs_hub: Any) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    with TestClient(jobs_hub) as test_client:
        yield test_client


@pytest.fixture
def jobs_seed(jobs_hub: Any) -> Any:
    from hubfixtures import Seed

    return Seed(jobs_hub)


def jsonl_gz(records: list[dict[str, Any]]) -> bytes:
    return gzip.compress(("\n".join(json.dumps(r) for r in records) + "\n").encode())


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


@pytest.fixture
def ctx(jobs_hub: Any, jobs_seed: Any, tmp_path: Path) -> IngestContext:
    """An ingest context on the hub's database and a local store; ``ctx.sent`` records enqueues."""
    jobs_seed.user("d1", "alice")
    sent: list[tuple[str, str]] = []
    context = IngestContext(
        sessions=jobs_hub.state.sessions,
        store=LocalStore(tmp_path / "store"),
        max_file_bytes=4 << 20,
        max_trace_bytes=64 << 20,
        stale_after=timedelta(minutes=5),
        max_attempts=2,
        enqueue=lambda name, job_id: sent.append((name, job_id)),
    )
    context.sent = sent  # type: ignore[attr-defined]
    return context


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
        job_id = job.id
    place = JobPlace("d1", user, job_id)
    for name, data in files.items():
        ctx.store.put(place.raw_key(name), data)
    return job_id, place
