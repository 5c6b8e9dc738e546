"""The work behind the job routes that touch storage: streamed uploads, presigned grants, deletes.

Uploads stream: the request body goes to ``ObjectStore.put_stream`` chunk by chunk (a worker
thread pulls each chunk from the event loop), so a 500 MiB trace never sits in memory. Limits
(``job_max_file_bytes`` per file, ``job_max_total_bytes`` per job) are checked from
``Content-Length`` before reading and again while streaming; over a limit the store keeps nothing
and the answer is 413. The per-job total is the sum of the job's stored raw files, so two
uploads racing each other may pass it by at most one file.

The per-user storage quota (the domain setting ``user_storage_quota_bytes``) is checked the same
way against the hub's records: every upload writes its job's raw total to ``Job.raw_bytes``, and
a user's usage is the sum of that column over their jobs (one indexed query, no storage walk).
Over it the answer is 413 ``StorageQuotaExceeded`` saying the quota, the usage and what to do.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass

import anyio.from_thread
from sqlalchemy.orm import Session
from starlette.requests import ClientDisconnect

from profilerhub_core.db.models import Job
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import InvalidInput, PayloadTooLarge, ProfilerHubError, QuotaExceeded
from profilerhub_core.jobstorage import JobPlace, raw_bytes
from profilerhub_core.records import jobs
from profilerhub_core.settings import Settings
from profilerhub_core.storage import ObjectStore
from profilerhub_hub.deps.targets import Resolved
from profilerhub_hub.job_schemas import UploadGrant, UploadInfo

PRESIGN_SECONDS = 3600
log = logging.getLogger("profilerhub.hub")


def upload_info(settings: Settings, store: ObjectStore, job_url: str) -> UploadInfo:
    presigned = settings.job_presigned_uploads and store.supports_presigned_urls
    return UploadInfo(
        mode="s3" if presigned else "hub",
        files_url=f"{job_url}/files",
        uploads_url=f"{job_url}/uploads",
        max_file_bytes=settings.job_max_file_bytes,
        max_total_bytes=settings.job_max_total_bytes,
    )


@dataclass(frozen=True)
class Quota:
    """A user's storage quota and the raw bytes their *other* jobs hold (``Job.raw_bytes``)."""

    user: str
    limit: int
    others: int

    def left(self, used: int) -> int:
        """Bytes the job may still add when it holds ``used`` already."""
        return self.limit - self.others - used

    def exceeded(self, used: int, size: int | None) -> QuotaExceeded:
        this = f"this file is {size} bytes" if size is not None else "this file does not fit"
        return QuotaExceeded(
            f"User '{self.user}' would pass the storage quota of {self.limit} bytes "
            f"(domain setting user_storage_quota_bytes): {self.others + used} bytes are stored in "
            f"their jobs and {this}; nothing was stored. Delete jobs that are no longer needed, or ask "
            "a domain admin to raise the quota, then send the file again (the SDK keeps it for "
            "`profilerhub upload --spilled`)"
        )


def quota_of(session: Session, target: Resolved, job: Job) -> Quota | None:
    """The quota that applies to uploads to ``job`` (None: the domain sets none)."""
    assert target.domain is not None and target.user is not None
    limit = DomainSettings.of(target.domain.settings).user_storage_quota_bytes
    if not limit:
        return None
    return Quota(target.user.name, limit, jobs.user_raw_bytes(session, job.user_id, besides_job=job.id))


def count_raw_bytes(session: Session, job_id: str, total: int) -> None:
    """Record the job's raw total after an upload (the quota's usage) and commit."""
    jobs.record_raw_bytes(session, job_id, total)
    session.commit()


def _room(
    settings: Settings, store: ObjectStore, place: JobPlace, key: str, size: int | None, quota: Quota | None
) -> tuple[int, int]:
    """The most bytes the file at ``key`` may have, and the bytes the job's other raw files hold;
    413 when ``size`` is already over a limit."""
    used = raw_bytes(store, place, besides=key)
    left = settings.job_max_total_bytes - used
    if size is not None and size > settings.job_max_file_bytes:
        raise _file_too_large(settings, key)
    if size is not None and size > left or left <= 0:
        raise PayloadTooLarge(
            f"The job's raw files would pass the limit of {settings.job_max_total_bytes} bytes "
            f"({used} bytes stored already); nothing was stored"
        )
    room = min(settings.job_max_file_bytes, left)
    if quota is not None:
        quota_left = quota.left(used)
        if size is not None and size > quota_left or quota_left <= 0:
            raise quota.exceeded(used, size)
        room = min(room, quota_left)
    return room, used


def _file_too_large(settings: Settings, key: str) -> PayloadTooLarge:
    name = key.rsplit("/raw/", 1)[-1]
    return PayloadTooLarge(
        f"File '{name}' is larger than the limit of {settings.job_max_file_bytes} bytes per file; "
        "nothing was stored"
    )


class _SyncChunks(Iterator[bytes]):
    """An async body stream read from a worker thread, one chunk at a time."""

    def __init__(self, stream: AsyncIterator[bytes]) -> None:
        self._stream = stream

    async def _next(self) -> bytes:
        return await self._stream.__anext__()

    def __next__(self) -> bytes:
        try:
            return anyio.from_thread.run(self._next)
        except StopAsyncIteration:
            raise StopIteration from None


def store_upload(
    settings: Settings,
    store: ObjectStore,
    place: JobPlace,
    path: str,
    body: AsyncIterator[bytes],
    content_length: int | None,
    quota: Quota | None = None,
) -> tuple[int, int]:
    """Stream ``body`` to the job's ``raw/{path}``; the size stored and the job's raw total now.
    Run it in a worker thread."""
    key = place.raw_key(path)  # InvalidInput for '..', '/x', '\\', control characters
    limit, used = _room(settings, store, place, key, content_length, quota)
    try:
        size = store.put_stream(key, _SyncChunks(body), max_bytes=limit)
        return size, used + size
    except PayloadTooLarge:
        if quota is not None and limit == quota.left(used):
            raise quota.exceeded(used, None) from None
        if limit == settings.job_max_file_bytes:
            raise _file_too_large(settings, key) from None
        raise PayloadTooLarge(
            f"The job's raw files would pass the limit of {settings.job_max_total_bytes} bytes; "
            "nothing was stored"
        ) from None
    except ClientDisconnect:
        raise InvalidInput(f"The upload of '{path}' was interrupted; nothing was stored") from None


def grant_upload(
    settings: Settings,
    store: ObjectStore,
    place: JobPlace,
    path: str,
    size: int | None,
    quota: Quota | None = None,
) -> tuple[UploadGrant, int]:
    """A presigned PUT for the job's ``raw/{path}`` (S3 storage only), and the job's raw total
    counting the declared ``size`` (the file goes straight to S3: the hub never sees its bytes)."""
    key = place.raw_key(path)
    if not (settings.job_presigned_uploads and store.supports_presigned_urls):
        raise InvalidInput("This hub takes files through the hub: PUT them to the job's files/ URL")
    _, used = _room(settings, store, place, key, size, quota)
    url = store.presigned_url(key, "PUT", PRESIGN_SECONDS)
    return UploadGrant(url=url, expires_in=PRESIGN_SECONDS), used + (size or 0)


def delete_owned(open_store: Callable[[], ObjectStore], prefix: str, owner: str) -> int | None:
    """Remove everything under a deleted job's, user's or domain's folder, after its row is gone.

    Best effort: the row's delete is already committed, so a storage failure here is logged and
    left to the sweeper (``profilerhub_worker.sweep``), which removes folders no row owns. Returns
    how many objects went, or None when the store failed.
    """
    try:
        return open_store().delete_prefix(prefix)
    except ProfilerHubError as exc:
        log.warning("objects of deleted %s stay until the next sweep: %s", owner, exc.message)
        return None


__all__ = [
    "Quota",
    "count_raw_bytes",
    "delete_owned",
    "grant_upload",
    "quota_of",
    "store_upload",
    "upload_info",
]
