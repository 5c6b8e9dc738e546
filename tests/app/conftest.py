"""Fixtures of the profiler app's tests: ``app_client``, alice's app in-process (with a real app
token), asking the in-process hub for her jobs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from profilerhub_worker.ingest import IngestContext
from tests.support.jobs import open_app


@pytest.fixture
def app_client(
    ctx: IngestContext, jobs_hub: Any, jobs_client: TestClient, tmp_path: Path
) -> Iterator[TestClient]:
    with open_app(ctx, jobs_hub, jobs_client, tmp_path / "store", "alice") as client:
        yield client
