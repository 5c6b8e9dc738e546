"""What only the S3 store promises: its prefix, paging, multipart, presigned URLs, clear failures.

Runs against moto's S3 server over real HTTP. moto does not check signatures, so the presigned-URL
tests assert the URL's shape and that the bytes land, not that a forged URL is refused.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest
from botocore.exceptions import ClientError

from profilerhub_core.errors import InvalidInput, NotFound, Unavailable
from profilerhub_core.storage import MIN_PART_SIZE, MultipartUpload, UploadedPart
from profilerhub_core.storage.s3 import S3Store

S3_PREFIX = "ph/data"  # the prefix conftest's s3_store uses


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pending_uploads(client: Any, bucket: str) -> list[Any]:
    return list(client.list_multipart_uploads(Bucket=bucket).get("Uploads", []))


def _seed(bucket: str, keys: list[str]) -> None:
    """Put objects straight into moto's in-process backend: 1000 HTTP PUTs would take seconds here,
    and what is under test is listing and deleting them over HTTP."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for key in keys:
        backend.put_object(bucket, key, b".")


def test_listing_more_than_1000_objects_pages_through_all_and_deletes_them(
    s3_store: S3Store, s3_bucket: str
) -> None:
    keys = [f"many/{i:05d}" for i in range(1010)]
    _seed(s3_bucket, [f"{S3_PREFIX}/{key}" for key in keys])
    s3_store.put("many/00500/by-http", b"x")
    listed = [info.key for info in s3_store.list("many")]
    assert listed == sorted([*keys, "many/00500/by-http"])
    assert s3_store.delete_prefix("many") == 1011  # two DeleteObjects batches
    assert list(s3_store.list()) == []


def test_small_pages_still_list_everything_in_order(s3_client: Any, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, "p", client=s3_client, list_page_size=7)
    keys = [f"k/{i:03d}" for i in range(30)]
    for key in keys:
        store.put(key, b"x")
    assert [info.key for info in store.list("k/")] == keys


def test_objects_live_under_the_store_prefix_and_nothing_else_is_seen(
    s3_store: S3Store, s3_client: Any, s3_bucket: str
) -> None:
    for outside in (f"{S3_PREFIX}-other/x", f"{S3_PREFIX}z", "top-level"):
        s3_client.put_object(Bucket=s3_bucket, Key=outside, Body=b"not ours")
    s3_store.put("a/b", b"ours")
    raw = [o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]]
    assert f"{S3_PREFIX}/a/b" in raw
    assert [info.key for info in s3_store.list()] == ["a/b"]
    with pytest.raises(InvalidInput):
        s3_store.get(f"../{S3_PREFIX}-other/x")
    assert s3_store.delete_prefix("a") == 1
    assert len(s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]) == 3


def test_put_stream_above_the_part_size_is_a_multipart_upload(
    s3_store: S3Store, s3_client: Any, s3_bucket: str
) -> None:
    data = os.urandom(2 * MIN_PART_SIZE + 10)
    step = 1 << 20
    s3_store.put_stream("mp/auto", [data[i : i + step] for i in range(0, len(data), step)])
    etag = s3_client.head_object(Bucket=s3_bucket, Key=f"{S3_PREFIX}/mp/auto")["ETag"]
    assert etag.strip('"').endswith("-3"), f"expected a 3-part ETag, got {etag}"
    assert s3_store.get("mp/auto") == data
    s3_store.put_stream("mp/single", [b"small"])
    etag = s3_client.head_object(Bucket=s3_bucket, Key=f"{S3_PREFIX}/mp/single")["ETag"]
    assert "-" not in etag


def test_parallel_part_uploads_keep_the_parts_in_order(s3_client: Any, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, "p", client=s3_client, part_size=MIN_PART_SIZE, upload_concurrency=2)
    data = os.urandom(3 * MIN_PART_SIZE + 99)
    step = 1 << 20
    assert store.put_stream("ordered", (data[i : i + step] for i in range(0, len(data), step))) == len(data)
    assert store.get("ordered") == data


def test_failed_streams_leave_no_pending_multipart_upload(
    s3_store: S3Store, s3_client: Any, s3_bucket: str
) -> None:
    def dying() -> Iterator[bytes]:
        yield b"x" * (MIN_PART_SIZE + 1)
        raise RuntimeError("producer died")

    with pytest.raises(RuntimeError):
        s3_store.put_stream("mp/dying", dying())
    with pytest.raises(Exception, match="limit of"):
        s3_store.put_stream("mp/huge", (b"y" * (1 << 20) for _ in range(8)), max_bytes=6 << 20)
    assert _pending_uploads(s3_client, s3_bucket) == []
    assert list(s3_store.list()) == []


# -- presigned URLs ------------------------------------------------------------------------------


def test_presigned_put_then_get_move_bytes_without_credentials(
    s3_store: S3Store, s3_server: dict[str, str], s3_bucket: str
) -> None:
    key = "jobs/j1/raw/trace one.json"
    put_url = s3_store.presigned_url(key, "PUT", expires_in=120)
    parts = urlsplit(put_url)
    endpoint = urlsplit(s3_server["endpoint_url"])
    assert (parts.scheme, parts.netloc) == (endpoint.scheme, endpoint.netloc)
    assert parts.path == f"/{s3_bucket}/{S3_PREFIX}/{quote(key)}"
    query = parse_qs(parts.query)
    assert query["X-Amz-Expires"] == ["120"]
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert "X-Amz-Signature" in query

    with httpx.Client() as http:
        assert http.put(put_url, content=b'{"traceEvents": []}').status_code == 200
        assert s3_store.get(key) == b'{"traceEvents": []}'
        get_url = s3_store.presigned_url(key, "GET", expires_in=60)
        assert parse_qs(urlsplit(get_url).query)["X-Amz-Expires"] == ["60"]
        answer = http.get(get_url)
    assert answer.status_code == 200
    assert answer.content == b'{"traceEvents": []}'


def test_presigned_part_urls_let_a_client_upload_the_parts(s3_store: S3Store) -> None:
    upload = s3_store.create_multipart_upload("jobs/j2/raw/big.bin")
    first, last = os.urandom(MIN_PART_SIZE), b"tail end"
    parts = []
    with httpx.Client() as http:
        for number, body in ((1, first), (2, last)):
            url = s3_store.presigned_part_url(upload, number, expires_in=300)
            query = parse_qs(urlsplit(url).query)
            assert query["uploadId"] == [upload.upload_id]
            assert query["partNumber"] == [str(number)]
            answer = http.put(url, content=body)
            assert answer.status_code == 200
            parts.append(UploadedPart(number, answer.headers["ETag"]))
    assert not s3_store.exists("jobs/j2/raw/big.bin")
    s3_store.complete_multipart_upload(upload, parts)
    assert s3_store.get("jobs/j2/raw/big.bin") == first + last


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.presigned_url("k", "DELETE", 60),
        lambda s: s.presigned_url("k", "GET", 0),
        lambda s: s.presigned_url("k", "GET", 7 * 24 * 3600 + 1),
        lambda s: s.presigned_url("../k", "GET", 60),
        lambda s: s.presigned_part_url(MultipartUpload("k", "id"), 0, 60),
    ],
    ids=["method", "zero-expiry", "over-7-days", "unsafe-key", "part-number"],
)
def test_presigned_url_refuses_bad_arguments(s3_store: S3Store, call: Any) -> None:
    with pytest.raises(InvalidInput):
        call(s3_store)


def test_addressing_is_virtual_hosted_on_aws_and_path_style_elsewhere() -> None:
    creds: dict[str, Any] = {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"}
    with S3Store("traces", "p", region="eu-west-1", **creds) as aws:
        assert urlsplit(aws.presigned_url("k")).netloc == "traces.s3.eu-west-1.amazonaws.com"
    with S3Store("my.dotted.bucket", region="eu-west-1", **creds) as dotted:
        assert urlsplit(dotted.presigned_url("k")).path == "/my.dotted.bucket/k"
    with S3Store("traces", endpoint_url="https://minio.internal:9000", region="us-east-1", **creds) as minio:
        url = urlsplit(minio.presigned_url("k"))
        assert (url.netloc, url.path) == ("minio.internal:9000", "/traces/k")
    with S3Store("traces", region="eu-west-1", addressing_style="path", **creds) as forced:
        assert urlsplit(forced.presigned_url("k")).path == "/traces/k"


# -- failures say what to check ------------------------------------------------------------------


def test_unreachable_endpoint_is_unavailable_and_names_the_endpoint(s3_server: dict[str, str]) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    with S3Store(
        "traces",
        endpoint_url=endpoint,
        region="us-east-1",
        max_attempts=1,
        connect_timeout=2,
        aws_access_key_id="k",
        aws_secret_access_key="s",
    ) as store:
        for call in (lambda: store.put("k", b"x"), store.check, lambda: list(store.list())):
            with pytest.raises(Unavailable, match="check the endpoint URL") as raised:
                call()
            assert endpoint in raised.value.message


def test_missing_bucket_is_unavailable_and_names_the_bucket(s3_client: Any) -> None:
    store = S3Store("no-such-bucket-here", client=s3_client)
    with pytest.raises(Unavailable, match="'no-such-bucket-here' does not exist"):
        store.put("k", b"x")
    with pytest.raises(Unavailable, match="'no-such-bucket-here' does not exist"):
        store.check()


def test_missing_credentials_are_unavailable_and_say_how_to_provide_them(
    s3_server: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with S3Store("traces", endpoint_url=s3_server["endpoint_url"], region="us-east-1") as store:
        with pytest.raises(Unavailable, match="AWS_ACCESS_KEY_ID"):
            store.put("k", b"x")
        with pytest.raises(Unavailable, match="credentials"):
            store.presigned_url("k")


@pytest.mark.parametrize(
    "code, expected",
    [
        ("NoSuchKey", NotFound),
        ("NoSuchUpload", NotFound),
        ("EntityTooSmall", InvalidInput),
        ("InvalidPart", InvalidInput),
        ("InvalidPartOrder", InvalidInput),
        ("AccessDenied", Unavailable),
        ("InvalidAccessKeyId", Unavailable),
        ("SignatureDoesNotMatch", Unavailable),
        ("NoSuchBucket", Unavailable),
        ("SlowDown", Unavailable),
    ],
)
def test_s3_error_codes_map_to_store_errors(s3_client: Any, code: str, expected: type) -> None:
    store = S3Store("traces", client=s3_client)
    error = ClientError({"Error": {"Code": code, "Message": "m"}}, "GetObject")
    translated = store._translate(error, "k")
    assert type(translated) is expected
    if code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
        assert "check the credentials" in translated.message


def test_reading_an_object_that_changes_midway_fails_instead_of_mixing(s3_store: S3Store) -> None:
    s3_store.put("moving", b"a" * (3 << 20))
    with s3_store.open("moving") as f:
        assert f.read(10) == b"a" * 10
        s3_store.put("moving", b"b" * (3 << 20))
        f.seek(2 << 20)
        with pytest.raises(Unavailable, match="changed while it was being read"):
            f.read(10)


def test_key_length_counts_the_store_prefix(s3_client: Any, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, "p" * 100, client=s3_client)
    with pytest.raises(InvalidInput, match="with the store prefix"):
        store.put("k/" + "x" * 250 + "/" + "y" * 250 + "/" + "z" * 250 + "/" + "w" * 200, b"x")
