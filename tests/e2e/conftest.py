"""Fixtures for the end-to-end tests: ``job_stack`` (hub + worker processes on a real Redis), and
the one Chromium the package's browser tests share (``pages_stack.launch_browser``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.jobs_stack import JobStack
from tests.e2e.pages_stack import SHARED, SharedChromium


@pytest.fixture(scope="package", autouse=True)
def _one_chromium() -> Iterator[None]:
    """While tests/e2e runs, ``launch_browser`` hands out one shared Chromium (launched on first
    use); it stops when the package's last test ends."""
    shared = SharedChromium()
    SHARED.append(shared)
    try:
        yield
    finally:
        SHARED.remove(shared)
        shared.close()


@pytest.fixture(scope="module")
def job_stack(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[JobStack]:
    """Hub and worker on SQLite and local storage, shared by a module's tests (each uses its own
    user); a test that stops the hub starts it again before it ends."""
    stack = JobStack.start(tmp_path_factory.mktemp("jobstack"), redis_url)
    yield stack
    stack.stop()
