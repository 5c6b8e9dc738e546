"""The S3 sink: ``s3://bucket/prefix`` -> objects ``prefix/<job>/<path>``, straight with boto3.

The endpoint comes from ``PROFILERHUB_S3_ENDPOINT_URL`` or ``AWS_ENDPOINT_URL`` (MinIO, Ceph,
moto), credentials and region from boto3's usual chain (``AWS_ACCESS_KEY_ID`` ...).
"""

from __future__ import annotations

import os
from typing import Any

from .base import Sink, SinkError, check_relative_path, content_type

# Errors that no retry can fix: stop using the sink.
_FATAL_CODES = {
    "NoSuchBucket",
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AllAccessDisabled",
    "InvalidBucketName",
    "403",
    "404",
}


def split_s3_url(url: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` -> ``("bucket", "a/b")`` (the prefix without slashes at either end)."""
    rest = url[len("s3://") :] if url.startswith("s3://") else url
    bucket, _, prefix = rest.partition("/")
    return bucket, prefix.strip("/")


def s3_client() -> Any:
    """A boto3 S3 client for ProfilerHub's endpoint, with short timeouts and few retries."""
    import boto3
    from botocore.config import Config

    endpoint = os.environ.get("PROFILERHUB_S3_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL") or None
    config = Config(connect_timeout=5, read_timeout=60, retries={"max_attempts": 2, "mode": "standard"})
    return boto3.client("s3", endpoint_url=endpoint, config=config)


class S3Sink(Sink):
    """Puts each file as one object; a job name already used under the prefix gets ``-2``, ``-3`` ..."""

    kind = "s3"

    def __init__(self, url: str, job: str, job_dir: str | None = None) -> None:
        self.bucket, self.prefix = split_s3_url(url)
        self.job = job
        self.job_dir = job_dir or job
        self._resume = job_dir is not None  # keep writing to the folder an earlier run began
        self._client: Any = None

    @property
    def location(self) -> str:
        return f"s3://{self.bucket}/{self._key('')}"

    def _key(self, path: str) -> str:
        return "/".join(p for p in (self.prefix, self.job_dir, path) if p) + ("/" if not path else "")

    def open(self) -> None:
        try:
            self._client = s3_client()
            n = 1
            while not self._resume and self._exists(self._key("job.json")):
                n += 1
                self.job_dir = f"{self.job}-{n}"
        except SinkError:
            raise
        except Exception as exc:
            raise _error(exc) from exc

    def _exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self._client.head_object(Bucket=self.bucket, Key=key)
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise

    def put(self, path: str, data: bytes) -> None:
        key = self._key(check_relative_path(path))
        try:
            self._client.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type(path))
        except Exception as exc:
            raise _error(exc) from exc

    def complete(self, report: dict[str, Any] | None = None) -> None:
        """Nothing to do: the run writes ``_SUCCESS`` itself as its last file."""

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _error(exc: Exception) -> SinkError:
    from botocore.exceptions import ClientError, NoCredentialsError, ParamValidationError

    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        code = str(err.get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        msg = f"S3 refused the request: {code} {err.get('Message', '')}".strip()
        if code in _FATAL_CODES:
            return SinkError(msg, fatal=True)
        return SinkError(msg, retryable=status >= 500 or status in (408, 429) or code == "SlowDown")
    if isinstance(exc, (NoCredentialsError, ParamValidationError)):
        return SinkError(f"S3 is not usable: {exc}", fatal=True)
    # EndpointConnectionError, timeouts, connection resets: the endpoint may come back.
    return SinkError(f"S3 endpoint unreachable: {exc}", retryable=True)
