"""Where one job's objects are, for the hub (uploads, delete), the ingest worker and the app.

    store = open_job_store(settings)
    place = place_of(job)                 # JobPlace(domain_id, user_id, job_id)
    store.put_stream(place.raw_key("system/000001.jsonl.gz"), chunks, max_bytes=...)
    store.list(place.raw_prefix)           # what the SDK uploaded
    place.processed_key(layout.SUMMARY)    # what ingest wrote

Keys follow ``profilerhub_core.storage.layout``: ``{domain_id}/{user_id}/jobs/{job_id}/raw|processed/…``,
by ids, never by names.
"""

from __future__ import annotations

from dataclasses import dataclass

from profilerhub_core.db.models import Job
from profilerhub_core.settings import Settings
from profilerhub_core.storage import ObjectStore, layout, open_store


def open_job_store(settings: Settings) -> ObjectStore:
    """The object store the settings name (``storage_url``, ``s3_endpoint_url``)."""
    return open_store(settings.storage_url, s3_endpoint_url=settings.s3_endpoint_url)


@dataclass(frozen=True, slots=True)
class JobPlace:
    """One job's folders in the store: its owner's domain and user ids, and its own id."""

    domain_id: str
    user_id: str
    job_id: str

    @property
    def prefix(self) -> str:
        return layout.job_prefix(self.domain_id, self.user_id, self.job_id)

    @property
    def raw_prefix(self) -> str:
        return layout.raw_prefix(self.domain_id, self.user_id, self.job_id)

    @property
    def processed_prefix(self) -> str:
        return layout.processed_prefix(self.domain_id, self.user_id, self.job_id)

    def raw_key(self, name: str) -> str:
        """The key of ``name`` under ``raw/``; ``InvalidInput`` for an unsafe name."""
        return layout.raw_key(self.domain_id, self.user_id, self.job_id, name)

    def processed_key(self, name: str) -> str:
        return layout.processed_key(self.domain_id, self.user_id, self.job_id, name)


def place_of(job: Job) -> JobPlace:
    """The ``JobPlace`` of a job row (its ids are all it takes)."""
    return JobPlace(job.domain_id, job.user_id, job.id)


def raw_bytes(store: ObjectStore, place: JobPlace, *, besides: str | None = None) -> int:
    """Total size of the job's raw files, leaving out the key ``besides`` (a file being replaced)."""
    return sum(info.size for info in store.list(place.raw_prefix) if info.key != besides)


__all__ = ["JobPlace", "open_job_store", "place_of", "raw_bytes"]
