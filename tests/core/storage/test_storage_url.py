"""open_store: storage URLs from settings become stores, anything else a clear InvalidInput."""

from __future__ import annotations

from pathlib import Path

import pytest

from profilerhub_core.errors import InvalidInput
from profilerhub_core.storage import LocalStore, open_store
from profilerhub_core.storage.s3 import S3Store


def test_file_url_opens_a_local_store_and_creates_the_directory(tmp_path: Path) -> None:
    root = tmp_path / "home dir" / "storage"
    with open_store(root.as_uri()) as store:
        assert isinstance(store, LocalStore)
        assert store.root == root.resolve()
        assert root.is_dir()
        store.put("a/b", b"x")
    assert (root / "a" / "b").read_bytes() == b"x"


def test_file_url_accepts_localhost_and_passes_fsync(tmp_path: Path) -> None:
    store = open_store(f"file://localhost{tmp_path}/s", fsync=True)
    assert isinstance(store, LocalStore)
    assert store.fsync


def test_s3_url_opens_a_store_under_the_prefix(s3_server: dict[str, str], s3_bucket: str) -> None:
    with open_store(
        f"s3://{s3_bucket}/profilerhub/prod/",
        s3_endpoint_url=s3_server["endpoint_url"],
        s3_region=s3_server["region"],
        aws_access_key_id=s3_server["access_key"],
        aws_secret_access_key=s3_server["secret_key"],
    ) as store:
        assert isinstance(store, S3Store)
        assert (store.bucket, store.prefix) == (s3_bucket, "profilerhub/prod/")
        store.check()
        store.put("k", b"v")
        assert store.get("k") == b"v"


def test_s3_url_without_a_prefix_uses_the_whole_bucket() -> None:
    store = open_store("s3://traces", s3_region="us-east-1")
    assert isinstance(store, S3Store)
    assert (store.bucket, store.prefix) == ("traces", "")
    store.close()


@pytest.mark.parametrize(
    "url, says",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("relative/dir", "unsupported scheme"),
        ("/abs/path/without/scheme", "unsupported scheme"),
        ("file://relative/dir", "names a host"),
        ("file://server/share/dir", "names a host"),
        ("file:relative", "absolute"),
        ("file:///", "absolute"),
        ("file:///tmp/x?mode=1", "query"),
        ("s3://", "bucket name"),
        ("s3:///prefix-only", "bucket name"),
        ("s3://user@bucket/x", "bucket name"),
        ("s3://bucket:9000/x", "bucket name"),
        ("s3://ab/x", "not valid"),
        ("s3://bucket/../x", "storage key"),
        ("s3://bucket//x", "storage key"),
        ("s3://bucket/x#frag", "fragment"),
        ("http://127.0.0.1:9000/bucket", "unsupported scheme"),
        ("gs://bucket/x", "unsupported scheme"),
    ],
)
def test_bad_storage_urls_say_what_is_accepted(url: str, says: str) -> None:
    with pytest.raises(InvalidInput, match=says):
        open_store(url)
