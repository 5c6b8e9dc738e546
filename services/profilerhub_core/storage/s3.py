"""Objects in an S3 bucket under an optional prefix, through boto3 (AWS S3, MinIO, Ceph, moto).

One boto3 client per store, built from its own session, so a store can be shared between threads.
Credentials come from the explicit arguments or boto3's usual chain (environment, shared config and
credentials files, container or instance role). Every botocore failure becomes one of the store's
errors (see :mod:`.base`); an ``Unavailable`` message names the endpoint and bucket to check.
"""

from __future__ import annotations

import io
import os
import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import Any, BinaryIO, Literal

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionError,
    CredentialRetrievalError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from profilerhub_core.errors import InvalidInput, NotFound, ProfilerHubError, StorageFull, Unavailable

from .base import (
    DEFAULT_CHUNK_SIZE,
    MIN_PART_SIZE,
    MultipartUpload,
    ObjectInfo,
    ObjectStore,
    PresignMethod,
    UploadedPart,
    check_chunk_size,
    check_expiry,
    check_part_number,
    check_parts,
    too_large,
)
from .keys import MAX_KEY_BYTES, matching, validate_key, validate_prefix

AddressingStyle = Literal["auto", "path", "virtual"]

DEFAULT_PART_SIZE = 8 * 1024 * 1024
_BUCKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,253}[A-Za-z0-9]")
_MISSING = {"NoSuchKey", "404", "NotFound"}
_DENIED = {
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "403",
}
_BAD_PARTS = {"EntityTooSmall", "InvalidPart", "InvalidPartOrder"}
# What S3-compatible stores answer when they are out of space: MinIO's drives full, a Ceph RGW
# user or bucket quota, the plain 507 (any code, matched by status too).
_NO_SPACE = frozenset({"XMinioStorageFull", "QuotaExceeded", "InsufficientStorage", "StorageFull"})
_DELETE_BATCH = 1000  # DeleteObjects' limit


def validate_bucket(bucket: str) -> str:
    rule = "3-255 letters, digits, '.', '-' or '_', starting and ending with a letter or digit"
    return matching(bucket, _BUCKET, "S3 bucket name", rule)


class S3Store(ObjectStore):
    """An :class:`ObjectStore` in ``bucket`` under ``prefix`` (``s3://bucket/prefix``).

    ``endpoint_url`` points at an S3-compatible service (MinIO, Ceph RGW); leave it unset for AWS.
    ``addressing_style`` defaults to path-style (``endpoint/bucket/key``) with an endpoint and to
    virtual-hosted (``bucket.s3.region.amazonaws.com``) on AWS. ``put_stream`` switches to a
    multipart upload once an object reaches ``part_size`` bytes (at least 5 MiB), sending up to
    ``upload_concurrency`` parts at once.

    ``client`` shares an existing boto3 S3 client (and its connection pool) between stores; the
    connection arguments are then ignored and ``close()`` leaves that client open.
    """

    supports_presigned_urls = True

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        aws_access_key_id: str | None = None,
        aws_secret_access_key: str | None = None,
        aws_session_token: str | None = None,
        addressing_style: AddressingStyle | None = None,
        part_size: int = DEFAULT_PART_SIZE,
        max_attempts: int = 5,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
        max_pool_connections: int = 32,
        list_page_size: int = 1000,
        upload_concurrency: int = 4,
        client: Any = None,
    ) -> None:
        self.bucket = validate_bucket(bucket)
        self.prefix = validate_prefix(prefix)
        if part_size < MIN_PART_SIZE:
            raise InvalidInput(f"part_size must be at least {MIN_PART_SIZE} bytes (S3's minimum part)")
        if not 1 <= list_page_size <= 1000:
            raise InvalidInput("list_page_size must be between 1 and 1000")
        if upload_concurrency < 1:
            raise InvalidInput("upload_concurrency must be at least 1")
        self.part_size = part_size
        self.upload_concurrency = upload_concurrency
        self.list_page_size = list_page_size
        if client is not None:
            self._client: Any = client
            self._owns_client = False
            self.endpoint_url = endpoint_url or client.meta.endpoint_url
            self.region = client.meta.region_name
            return
        self._owns_client = True
        self.endpoint_url = endpoint_url
        if addressing_style is None:
            # Dotted bucket names break TLS on virtual hosts; custom endpoints (given here or through
            # boto3's AWS_ENDPOINT_URL[_S3]) rarely have wildcard DNS.
            custom = endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3", os.environ.get("AWS_ENDPOINT_URL"))
            addressing_style = "path" if custom or "." in bucket else "virtual"
        config = Config(
            signature_version="s3v4",
            s3={"addressing_style": addressing_style},
            retries={"max_attempts": max_attempts, "mode": "standard"},
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_pool_connections=max_pool_connections,
        )
        # A session of its own: boto3's default session is not thread-safe, its clients are.
        session = boto3.session.Session(
            aws_access_key_id=aws_access_key_id,
            aws_secret_access_key=aws_secret_access_key,
            aws_session_token=aws_session_token,
            region_name=region,
        )
        try:
            self._client = session.client("s3", endpoint_url=endpoint_url, config=config)
        except (BotoCoreError, ValueError) as exc:
            raise InvalidInput(f"cannot configure S3 client for endpoint {endpoint_url!r}: {exc}") from exc
        self.region = self._client.meta.region_name

    def __repr__(self) -> str:
        return f"S3Store(s3://{self.bucket}/{self.prefix}, endpoint={self._where})"

    @property
    def _where(self) -> str:
        return str(self.endpoint_url or self._client.meta.endpoint_url)

    def _full(self, key: str) -> str:
        full = self.prefix + validate_key(key)
        if len(full.encode("utf-8")) > MAX_KEY_BYTES:
            raise InvalidInput(
                f"storage key {key!r} is longer than {MAX_KEY_BYTES} bytes with the store prefix"
            )
        return full

    # -- errors ----------------------------------------------------------------------------------

    @contextmanager
    def _errors(self, key: str | None = None) -> Iterator[None]:
        try:
            yield
        except ClientError as exc:
            raise self._translate(exc, key) from exc
        except (NoCredentialsError, PartialCredentialsError, CredentialRetrievalError) as exc:
            raise Unavailable(
                f"no usable S3 credentials for bucket {self.bucket!r} at {self._where}: {exc}; set "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, or an instance/pod role"
            ) from exc
        except (ConnectionError, ReadTimeoutError) as exc:
            raise Unavailable(
                f"cannot reach the S3 endpoint {self._where} for bucket {self.bucket!r}: {exc}; check the "
                "endpoint URL, the network and that the service is running"
            ) from exc
        except BotoCoreError as exc:
            raise Unavailable(
                f"S3 request to {self._where} (bucket {self.bucket!r}) failed: {exc}; check the endpoint, "
                "credentials and bucket"
            ) from exc

    def _translate(self, exc: ClientError, key: str | None) -> ProfilerHubError:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        detail = str(error.get("Message") or code)
        if code == "NoSuchBucket":
            return Unavailable(
                f"S3 bucket {self.bucket!r} does not exist at {self._where}; create it or fix the storage URL"
            )
        if code in _MISSING:
            return NotFound(f"no object at key {key!r}")
        if code == "NoSuchUpload":
            return NotFound(f"no multipart upload in progress for key {key!r}")
        if code in _BAD_PARTS:
            return InvalidInput(f"multipart upload for {key!r} rejected ({code}): {detail}")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in _NO_SPACE or status == 507:
            return StorageFull(
                f"S3 at {self._where} has no space left for bucket {self.bucket!r} ({code or status}): "
                f"{detail}; free space or raise the bucket's quota"
            )
        if code in _DENIED:
            return Unavailable(
                f"S3 at {self._where} refused access to bucket {self.bucket!r} ({code}); check the "
                "credentials and that they allow s3:ListBucket, GetObject, PutObject and DeleteObject on it"
            )
        return Unavailable(
            f"S3 at {self._where} answered {code or 'an error'} for bucket {self.bucket!r}: {detail}"
        )

    # -- whole objects -------------------------------------------------------------------------

    def put_stream(self, key: str, chunks: Iterable[bytes], *, max_bytes: int | None = None) -> int:
        full = self._full(key)
        buffer = bytearray()
        size = 0
        upload: MultipartUpload | None = None
        pool: ThreadPoolExecutor | None = None
        in_flight: deque[Future[UploadedPart]] = deque()
        parts: list[UploadedPart] = []

        def send(target: MultipartUpload, workers: ThreadPoolExecutor, data: bytes) -> None:
            # At most upload_concurrency parts in flight, so memory stays near (concurrency+1) parts.
            number = len(parts) + len(in_flight) + 1
            if len(in_flight) >= self.upload_concurrency:
                parts.append(in_flight.popleft().result())
            in_flight.append(workers.submit(self.upload_part, target, number, data))

        try:
            for chunk in chunks:
                size += len(chunk)
                if max_bytes is not None and size > max_bytes:
                    raise too_large(key, max_bytes)
                buffer += chunk
                while len(buffer) >= self.part_size:
                    if upload is None or pool is None:
                        upload = self.create_multipart_upload(key)
                        pool = ThreadPoolExecutor(self.upload_concurrency, thread_name_prefix="s3-part")
                    send(upload, pool, bytes(buffer[: self.part_size]))
                    del buffer[: self.part_size]
            if upload is None or pool is None:
                with self._errors(key):
                    self._client.put_object(Bucket=self.bucket, Key=full, Body=bytes(buffer))
                return size
            if buffer:
                send(upload, pool, bytes(buffer))
            parts.extend(future.result() for future in in_flight)
            self.complete_multipart_upload(upload, parts)
        except BaseException:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)  # no part may land after the abort
            if upload is not None:
                with suppress(Exception):
                    self.abort_multipart_upload(upload)
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        return size

    def get(self, key: str) -> bytes:
        full = self._full(key)
        with self._errors(key):
            body = self._client.get_object(Bucket=self.bucket, Key=full)["Body"]
            try:
                return bytes(body.read())
            finally:
                body.close()

    def open(self, key: str) -> BinaryIO:
        info = self._head(key)
        raw = _RangeReader(self, key, info["ContentLength"], info.get("ETag"))
        return io.BufferedReader(raw, buffer_size=DEFAULT_CHUNK_SIZE)

    def stream(self, key: str, chunk_size: int = DEFAULT_CHUNK_SIZE) -> Iterator[bytes]:
        check_chunk_size(chunk_size)
        full = self._full(key)
        with self._errors(key):
            body = self._client.get_object(Bucket=self.bucket, Key=full)["Body"]
        return self._chunks(body, key, chunk_size)

    def _chunks(self, body: Any, key: str, chunk_size: int) -> Iterator[bytes]:
        try:
            with self._errors(key):
                yield from body.iter_chunks(chunk_size)
        finally:
            body.close()

    def _head(self, key: str) -> dict[str, Any]:
        full = self._full(key)
        with self._errors(key):
            return dict(self._client.head_object(Bucket=self.bucket, Key=full))

    def head(self, key: str) -> ObjectInfo:
        info = self._head(key)
        return ObjectInfo(key, int(info["ContentLength"]), info["LastModified"])

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        folder = self.prefix + validate_prefix(prefix)
        return self._pages(folder)

    def _pages(self, folder: str) -> Iterator[ObjectInfo]:
        paginator = self._client.get_paginator("list_objects_v2")
        pages = paginator.paginate(
            Bucket=self.bucket, Prefix=folder, PaginationConfig={"PageSize": self.list_page_size}
        )
        with self._errors(folder):
            for page in pages:
                for item in page.get("Contents", ()):
                    yield ObjectInfo(item["Key"][len(self.prefix) :], int(item["Size"]), item["LastModified"])

    def delete(self, key: str) -> None:
        full = self._full(key)
        with self._errors(key):
            self._client.delete_object(Bucket=self.bucket, Key=full)

    def delete_prefix(self, prefix: str) -> int:
        folder = validate_prefix(prefix)
        if not folder:
            raise InvalidInput("delete_prefix needs a non-empty prefix; refusing to empty the whole store")
        count = 0
        batch: list[str] = []
        for info in self.list(folder):
            batch.append(self.prefix + info.key)
            if len(batch) == _DELETE_BATCH:
                count += self._delete_batch(batch, folder)
                batch = []
        if batch:
            count += self._delete_batch(batch, folder)
        return count

    def _delete_batch(self, keys: Sequence[str], folder: str) -> int:
        with self._errors(folder):
            answer = self._client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True}
            )
        if answer.get("Errors"):
            first = answer["Errors"][0]
            raise Unavailable(
                f"S3 at {self._where} could not delete {len(answer['Errors'])} object(s) under {folder!r} "
                f"in bucket {self.bucket!r}, e.g. {first.get('Key')!r}: {first.get('Code')}; check that the "
                "credentials allow s3:DeleteObject"
            )
        return len(keys)

    # -- multipart -------------------------------------------------------------------------------

    def _upload_args(self, upload: MultipartUpload) -> dict[str, str]:
        if not isinstance(upload.upload_id, str) or not upload.upload_id:
            raise NotFound(f"no multipart upload {upload.upload_id!r} for key {upload.key!r}")
        return {"Bucket": self.bucket, "Key": self._full(upload.key), "UploadId": upload.upload_id}

    def create_multipart_upload(self, key: str) -> MultipartUpload:
        full = self._full(key)
        with self._errors(key):
            answer = self._client.create_multipart_upload(Bucket=self.bucket, Key=full)
        return MultipartUpload(key, answer["UploadId"])

    def upload_part(self, upload: MultipartUpload, part_number: int, data: bytes) -> UploadedPart:
        check_part_number(part_number)
        args = self._upload_args(upload)
        with self._errors(upload.key):
            answer = self._client.upload_part(PartNumber=part_number, Body=data, **args)
        return UploadedPart(part_number, answer["ETag"])

    def complete_multipart_upload(self, upload: MultipartUpload, parts: Sequence[UploadedPart]) -> None:
        check_parts(parts)
        args = self._upload_args(upload)
        listed = [{"PartNumber": p.part_number, "ETag": p.etag} for p in parts]
        with self._errors(upload.key):
            self._client.complete_multipart_upload(MultipartUpload={"Parts": listed}, **args)

    def abort_multipart_upload(self, upload: MultipartUpload) -> None:
        try:
            args = self._upload_args(upload)
            with self._errors(upload.key):
                self._client.abort_multipart_upload(**args)
        except NotFound:
            pass

    # -- URLs ------------------------------------------------------------------------------------

    def presigned_url(self, key: str, method: PresignMethod = "GET", expires_in: int = 3600) -> str:
        operations = {"GET": "get_object", "PUT": "put_object"}
        if method not in operations:
            raise InvalidInput(f"presigned URLs are for GET or PUT, not {method!r}")
        params = {"Bucket": self.bucket, "Key": self._full(key)}
        return self._presign(operations[method], params, expires_in, key)

    def presigned_part_url(self, upload: MultipartUpload, part_number: int, expires_in: int = 3600) -> str:
        check_part_number(part_number)
        params: dict[str, Any] = {**self._upload_args(upload), "PartNumber": part_number}
        return self._presign("upload_part", params, expires_in, upload.key)

    def _presign(self, operation: str, params: dict[str, Any], expires_in: int, key: str) -> str:
        check_expiry(expires_in)
        with self._errors(key):
            return str(self._client.generate_presigned_url(operation, Params=params, ExpiresIn=expires_in))

    # -- lifecycle -------------------------------------------------------------------------------

    def check(self) -> None:
        try:
            with self._errors():
                self._client.head_bucket(Bucket=self.bucket)
        except NotFound as exc:  # HEAD has no body, so a missing bucket is a bare 404
            raise Unavailable(
                f"S3 bucket {self.bucket!r} does not exist at {self._where}; create it or fix the storage URL"
            ) from exc

    def close(self) -> None:
        if self._owns_client:
            self._client.close()


class _RangeReader(io.RawIOBase):
    """Seekable reads of one S3 object by ranged GETs, pinned to the ETag seen when opened."""

    def __init__(self, store: S3Store, key: str, size: int, etag: str | None) -> None:
        super().__init__()
        self._store = store
        self._key = key
        self._size = int(size)
        self._etag = etag
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._pos = base + offset
        return self._pos

    def _fetch(self, start: int, end: int) -> bytes:
        store = self._store
        extra = {"IfMatch": self._etag} if self._etag else {}
        with store._errors(self._key):
            try:
                body = store._client.get_object(
                    Bucket=store.bucket, Key=store._full(self._key), Range=f"bytes={start}-{end}", **extra
                )["Body"]
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "PreconditionFailed":
                    raise Unavailable(
                        f"object {self._key!r} changed while it was being read; open it again"
                    ) from exc
                raise
            try:
                return bytes(body.read())
            finally:
                body.close()

    def readinto(self, buffer: Any) -> int:
        if self._pos >= self._size:
            return 0
        view = memoryview(buffer).cast("B")
        end = min(self._pos + len(view), self._size)
        if end <= self._pos:
            return 0
        data = self._fetch(self._pos, end - 1)
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def readall(self) -> bytes:
        if self._pos >= self._size:
            return b""
        data = self._fetch(self._pos, self._size - 1)
        self._pos += len(data)
        return data


__all__ = ["DEFAULT_PART_SIZE", "AddressingStyle", "S3Store", "validate_bucket"]
