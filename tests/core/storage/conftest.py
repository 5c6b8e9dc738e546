"""Stores for the storage tests: a local directory and S3 over real HTTP (moto's server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from profilerhub_core.storage import MIN_PART_SIZE, LocalStore, ObjectStore
from profilerhub_core.storage.s3 import S3Store

S3_PREFIX = "ph/data"  # test_storage_s3 assumes this prefix


@pytest.fixture
def local_store(tmp_path: Path) -> Iterator[LocalStore]:
    with LocalStore(tmp_path / "store") as store:
        yield store


@pytest.fixture(scope="session")
def s3_client(s3_server: dict[str, str]) -> Iterator[Any]:
    """One S3Store-built client for the session: building a boto3 client costs ~0.2 s each time."""
    store = S3Store(
        "unused",
        endpoint_url=s3_server["endpoint_url"],
        region=s3_server["region"],
        aws_access_key_id=s3_server["access_key"],
        aws_secret_access_key=s3_server["secret_key"],
    )
    yield store._client
    store.close()


@pytest.fixture
def s3_store(s3_client: Any, s3_bucket: str) -> Iterator[S3Store]:
    """An S3 store under a prefix, with the smallest part size S3 allows so multipart is cheap to reach."""
    with S3Store(s3_bucket, S3_PREFIX, client=s3_client, part_size=MIN_PART_SIZE) as store:
        yield store


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest) -> ObjectStore:
    """Each contract test runs once per backend."""
    fixture = {"local": "local_store", "s3": "s3_store"}[request.param]
    found: ObjectStore = request.getfixturevalue(fixture)
    return found
