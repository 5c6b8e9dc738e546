"""The object-store interface every backend implements, and the values it passes around.

Errors (from :mod:`profilerhub_core.errors`), the same on every backend:

* ``InvalidInput``: an unsafe key or prefix (see :mod:`.keys`), a bad argument, or a multipart
  upload whose parts do not fit together (wrong ETag, a part under 5 MiB that is not the last).
* ``NotFound``: the object, or the multipart upload, does not exist.
* ``PayloadTooLarge``: ``put_stream(..., max_bytes=N)`` was given more than ``N`` bytes.
* ``Unavailable``: the backend failed (endpoint unreachable, credentials refused, bucket missing,
  disk full); the message says what to check. Retrying later may help.
* :class:`PresignNotSupported`: ``presigned_url`` on a backend without presigned URLs; check
  ``supports_presigned_urls`` first.

Writes are all-or-nothing: a reader sees the old object or the new one, never a part, and a write
that fails (or exceeds ``max_bytes``) leaves nothing behind.
"""

from __future__ import annotations

import abc
import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Literal, Self

from profilerhub_core.errors import InvalidInput, NotFound, PayloadTooLarge, ProfilerHubError

# S3's rules for multipart uploads, applied by every backend so code tried on one works on the other.
MIN_PART_SIZE = 5 * 1024 * 1024
MAX_PART_NUMBER = 10_000
DEFAULT_CHUNK_SIZE = 1024 * 1024
MAX_PRESIGN_SECONDS = 7 * 24 * 3600

PresignMethod = Literal["GET", "PUT"]


class PresignNotSupported(ProfilerHubError, NotImplementedError):
    """This backend cannot hand out URLs; serve or accept the bytes through the hub instead."""

    code = "NotSupported"


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """One stored object: its key (relative to the store), size in bytes, last change (UTC)."""

    key: str
    size: int
    modified: dt.datetime


@dataclass(frozen=True, slots=True)
class MultipartUpload:
    """A multipart upload in progress. Plain strings, so it can be sent to a client and rebuilt."""

    key: str
    upload_id: str


@dataclass(frozen=True, slots=True)
class UploadedPart:
    """What ``complete_multipart_upload`` needs of each part: its number and the ETag it got."""

    part_number: int
    etag: str


class ObjectStore(abc.ABC):
    """Objects under relative ``/``-separated keys, on a local directory or an S3 bucket.

    Instances are safe to share between threads. Use :func:`~profilerhub_core.storage.open_store`
    to build one from a storage URL; ``close()`` (or ``with``) releases connections.
    """

    #: Whether :meth:`presigned_url` works here (S3) or raises :class:`PresignNotSupported` (local).
    supports_presigned_urls: bool = False

    # -- whole objects -------------------------------------------------------------------------

    def put(self, key: str, data: bytes | bytearray | memoryview | BinaryIO) -> int:
        """Store ``data`` (bytes, or a binary file read to its end) at ``key``; return its size."""
        if isinstance(data, bytes | bytearray | memoryview):
            return self.put_stream(key, [bytes(data)])
        return self.put_stream(key, iter(lambda: data.read(DEFAULT_CHUNK_SIZE), b""))

    @abc.abstractmethod
    def put_stream(self, key: str, chunks: Iterable[bytes], *, max_bytes: int | None = None) -> int:
        """Store the concatenated ``chunks`` at ``key`` without holding them all in memory.

        Returns the size written. With ``max_bytes``, more data raises ``PayloadTooLarge`` and
        nothing is stored. On S3, objects over one part size go up as a multipart upload.
        """

    def get(self, key: str) -> bytes:
        """The whole object at ``key``."""
        return b"".join(self.stream(key))

    @abc.abstractmethod
    def open(self, key: str) -> BinaryIO:
        """A seekable, read-only binary file over the object (ranged reads on S3); close it."""

    @abc.abstractmethod
    def stream(self, key: str, chunk_size: int = DEFAULT_CHUNK_SIZE) -> Iterator[bytes]:
        """The object in chunks of at most ``chunk_size`` bytes.

        ``NotFound`` is raised by this call, before the first chunk, when the object is missing.
        """

    @abc.abstractmethod
    def head(self, key: str) -> ObjectInfo:
        """Size and modification time of the object at ``key``."""

    def exists(self, key: str) -> bool:
        """Whether an object is stored at ``key`` (an unsafe key still raises ``InvalidInput``)."""
        try:
            self.head(key)
        except NotFound:
            return False
        return True

    @abc.abstractmethod
    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        """Every object under the folder ``prefix``, recursively, sorted by key (UTF-8 byte order).

        ``a/b`` means ``a/b/``: it never matches ``a/bc``. Results are fetched page by page.
        """

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Delete the object at ``key``; deleting a missing object is not an error."""

    @abc.abstractmethod
    def delete_prefix(self, prefix: str) -> int:
        """Delete every object under the folder ``prefix``; return how many. ``""`` is refused."""

    # -- multipart uploads: a client may upload the parts itself (presigned part URLs on S3) -----

    @abc.abstractmethod
    def create_multipart_upload(self, key: str) -> MultipartUpload:
        """Start a multipart upload to ``key``; nothing is visible at ``key`` until completed."""

    @abc.abstractmethod
    def upload_part(self, upload: MultipartUpload, part_number: int, data: bytes) -> UploadedPart:
        """Upload part ``part_number`` (1..10000). Every part but the last must be >= 5 MiB."""

    @abc.abstractmethod
    def complete_multipart_upload(self, upload: MultipartUpload, parts: Sequence[UploadedPart]) -> None:
        """Join ``parts`` (ascending part numbers, ETags as returned) into the object at the key."""

    @abc.abstractmethod
    def abort_multipart_upload(self, upload: MultipartUpload) -> None:
        """Discard an upload and its parts. Aborting an unknown or finished upload does nothing."""

    # -- URLs ------------------------------------------------------------------------------------

    def presigned_url(self, key: str, method: PresignMethod = "GET", expires_in: int = 3600) -> str:
        """A URL that lets its holder GET or PUT ``key`` for ``expires_in`` seconds, no credentials."""
        raise PresignNotSupported(f"{type(self).__name__} cannot hand out presigned URLs")

    def presigned_part_url(self, upload: MultipartUpload, part_number: int, expires_in: int = 3600) -> str:
        """A URL to PUT one part of ``upload``; its response's ``ETag`` header names the part."""
        raise PresignNotSupported(f"{type(self).__name__} cannot hand out presigned URLs")

    # -- lifecycle -------------------------------------------------------------------------------

    @abc.abstractmethod
    def check(self) -> None:
        """Raise ``Unavailable`` (saying what to fix) unless the store can be read and written."""

    def close(self) -> None:  # noqa: B027 - most backends hold nothing to release
        """Release connections; the store must not be used afterwards."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# -- helpers shared by the backends ---------------------------------------------------------------


def check_part_number(part_number: int) -> int:
    if isinstance(part_number, bool) or not isinstance(part_number, int):
        raise InvalidInput("part_number must be an integer")
    if not 1 <= part_number <= MAX_PART_NUMBER:
        raise InvalidInput(f"part_number must be between 1 and {MAX_PART_NUMBER}, not {part_number}")
    return part_number


def check_parts(parts: Sequence[UploadedPart]) -> None:
    """Parts named for completion must be non-empty with strictly ascending numbers."""
    if not parts:
        raise InvalidInput("a multipart upload needs at least one part to complete")
    previous = 0
    for part in parts:
        check_part_number(part.part_number)
        if part.part_number <= previous:
            raise InvalidInput("multipart parts must be listed once each, in ascending part_number order")
        previous = part.part_number


def check_expiry(expires_in: int) -> int:
    if isinstance(expires_in, bool) or not isinstance(expires_in, int):
        raise InvalidInput("expires_in must be a whole number of seconds")
    if not 1 <= expires_in <= MAX_PRESIGN_SECONDS:
        raise InvalidInput(f"expires_in must be between 1 and {MAX_PRESIGN_SECONDS} seconds (7 days)")
    return expires_in


def check_chunk_size(chunk_size: int) -> int:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidInput("chunk_size must be a positive number of bytes")
    return chunk_size


def too_large(key: str, max_bytes: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"object {key!r} is larger than the limit of {max_bytes} bytes; nothing was stored"
    )


__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "MAX_PART_NUMBER",
    "MAX_PRESIGN_SECONDS",
    "MIN_PART_SIZE",
    "MultipartUpload",
    "ObjectInfo",
    "ObjectStore",
    "PresignMethod",
    "PresignNotSupported",
    "UploadedPart",
]
