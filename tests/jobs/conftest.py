"""Fixtures for the job tests: an in-process hub whose sent tasks are recorded, and an ingest
context on its database (helpers that build raw files are in ``jobs_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

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
