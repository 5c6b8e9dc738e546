"""Fixtures for the end-to-end job tests: ``job_stack`` (hub + worker processes on a real Redis)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jobs_stack import JobStack


@pytest.fixture
def job_stack(hub_process: Any, tmp_path: Path, redis_url: str) -> Iterator[JobStack]:
    """Hub and worker on SQLite and local storage under ``tmp_path/home``."""
    stack = JobStack.start(hub_process, tmp_path, redis_url)
    yield stack
    stack.stop()
