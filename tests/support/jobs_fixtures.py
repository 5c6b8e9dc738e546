"""Fixtures for the job tests: an in-process hub whose sent tasks are recorded, and an ingest
context on its database (helpers that build raw files are in ``tests.support.jobs``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from profilerhub_core.storage import LocalStore
from profilerhub_worker.ingest import IngestContext
from tests.support.hub import SentTasks


@pytest.fixture
def jobs_hub(hub_settings: Any, hub_app: Any, tmp_path: Path) -> Iterator[Any]:
    """The hub with storage of this test's own (a local directory), limits small enough to test
    (1 MiB per file, 2 MiB per job) and a recorded task sender. (``hub_app`` is asked for only so
    the shared fixtures build it: their teardown expects it.)"""
    from profilerhub_hub.main import create_app

    settings = hub_settings.model_copy(
        update={
            "job_max_file_bytes": 1 << 20,
            "job_max_total_bytes": 2 << 20,
            "storage_url": (tmp_path / "hubstore").as_uri(),
        }
    )
    app = create_app(settings)
    app.state.services.app_tasks = SentTasks()
    yield app
    app.state.services.engine.dispose()


@pytest.fixture
def jobs_client(jobs_hub: Any) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    with TestClient(jobs_hub) as test_client:
        yield test_client


@pytest.fixture
def jobs_seed(jobs_hub: Any) -> Any:
    from tests.support.hub import Seed

    return Seed(jobs_hub)


@pytest.fixture
def ctx(jobs_hub: Any, jobs_seed: Any, tmp_path: Path) -> IngestContext:
    """An ingest context on the hub's database and a local store; ``ctx.sent`` records enqueues."""
    jobs_seed.user("d1", "alice")
    sent: list[tuple[str, str]] = []
    context = IngestContext(
        sessions=jobs_hub.state.services.sessions,
        store=LocalStore(tmp_path / "store"),
        max_file_bytes=4 << 20,
        max_trace_bytes=64 << 20,
        stale_after=timedelta(minutes=5),
        max_attempts=2,
        enqueue=lambda name, job_id: sent.append((name, job_id)),
    )
    context.sent = sent  # type: ignore[attr-defined]
    return context
