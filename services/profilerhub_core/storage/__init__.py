"""Object storage: one interface, a local-directory backend and an S3 backend.

    from profilerhub_core.storage import open_store, layout

    store = open_store("s3://traces/profilerhub", s3_endpoint_url="http://minio:9000")
    key = layout.raw_key(domain.id, user.id, job_id, "trace.json.gz")
    store.put_stream(key, chunks, max_bytes=limit)
    for info in store.list(layout.raw_prefix(domain.id, user.id, job_id)):
        ...

:class:`ObjectStore` documents the contract (and the errors) every backend keeps. ``S3Store`` is
imported on first use, so code that only needs a :class:`LocalStore` does not load boto3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import layout
from .base import (
    DEFAULT_CHUNK_SIZE,
    MAX_PART_NUMBER,
    MIN_PART_SIZE,
    MultipartUpload,
    ObjectInfo,
    ObjectStore,
    PresignMethod,
    PresignNotSupported,
    UploadedPart,
)
from .factory import open_store
from .keys import validate_key, validate_prefix
from .local import LocalStore

if TYPE_CHECKING:
    from .s3 import S3Store


def __getattr__(name: str) -> Any:
    if name == "S3Store":
        from .s3 import S3Store

        return S3Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "MAX_PART_NUMBER",
    "MIN_PART_SIZE",
    "LocalStore",
    "MultipartUpload",
    "ObjectInfo",
    "ObjectStore",
    "PresignMethod",
    "PresignNotSupported",
    "S3Store",
    "UploadedPart",
    "layout",
    "open_store",
    "validate_key",
    "validate_prefix",
]
