"""Fixtures for the end-to-end job tests: ``job_stack`` (hub + worker processes on a real Redis)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.jobs_stack import JobStack


@pytest.fixture(scope="module")
def job_stack(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[JobStack]:
    """Hub and worker on SQLite and local storage, shared by a module's tests (each uses its own
    user); a test that stops the hub starts it again before it ends."""
    stack = JobStack.start(tmp_path_factory.mktemp("jobstack"), redis_url)
    yield stack
    stack.stop()
