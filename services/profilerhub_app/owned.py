"""The caller's jobs: which jobs the owner has (the hub's word), and the store their objects are in.

This is the layer below the routes that every route reading a job goes through: it takes the
caller's token (the hub-signed token of the request being served) and the app's settings, never a
web request, so a route, a page or a background task asks it the same way.

Which jobs the owner has is the hub's to say, never storage's: :class:`OwnedJobs` asks the hub
(:class:`profilerhub_app.hub.HubJobs`) and shows exactly those jobs, with their status as the hub
records it. Storage is read only under ``{domain_id}/{user_id}/jobs/{job_id}/`` for a job id the
hub listed, by ids the hub gave, so objects a deleted job, user or domain left behind (a crash
between the row's delete and the objects', swept later) are never shown, and a new user who takes
a deleted user's name starts with nothing.

The list is one page at a time, sorted and filtered by the hub in SQL (``limit``, ``next_token``,
``sort``, ``order``, ``name_contains``, ``status`` pass through), so an owner with thousands of
jobs costs one small query and a storage listing per job on the page, not per job owned (and a
finished job's listing is kept: a job of many ranks holds thousands of objects). The
figures shown (duration, steps, GPUs, ranks) are the hub's, from the job row it sorts by; only a
Ready job ingested before the hub kept them has its ``processed/status.json`` read for them.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from profilerhub_app.hub import HubJobs
from profilerhub_app.settings import AppServiceSettings
from profilerhub_core.errors import NotFound, Unauthorized
from profilerhub_core.storage import ObjectStore, layout, open_store
from profilerhub_core.storage.keys import validate_key
from profilerhub_core.storage.layout import PROGRESS, STATUS, SUMMARY, owner_job_prefix, processed_name

#: The list parameters the app passes on to the hub (``docs/app-api.md``).
LIST_PARAMS = ("limit", "next_token", "sort", "order", "name_contains", "status")
DEFAULT_LIMIT = 25
#: The figures ingest writes on the hub's job row for the list (``summary.job_facts``).
FACTS = ("steps", "ranks", "gpus", "duration_s")
#: What a Processing job's ``processed/progress.json`` says (``ingest.fanout.put_progress``).
PROGRESS_FIELDS = ("traces_done", "traces", "bytes_done", "bytes")
#: How long the hub's word that a job is the owner's and Ready is reused (a timeline pan asks
#: several windows a second; each need not ask the hub again).
READY_SECONDS = 2.0


@dataclass(frozen=True)
class OwnedJob:
    """A job the hub says the owner has, and the store rooted at that owner's folder."""

    store: ObjectStore
    record: dict[str, Any]

    @property
    def job_id(self) -> str:
        return str(self.record["job_id"])

    @property
    def ready(self) -> bool:
        return self.record.get("status") == "Ready"

    def key(self, name: str) -> str:
        """The store key of ``name`` in this job's folder (``raw/…`` or ``processed/…``)."""
        return validate_key(owner_job_prefix(self.job_id) + name)

    def processed(self, name: str) -> str:
        """The store key of ``processed/{name}`` (a name of ``profilerhub_core.storage.layout``)."""
        return self.key(processed_name(name))


class OwnedJobs:
    """The owner's jobs as the hub lists them, and their store (opened once, on first use)."""

    def __init__(self, settings: AppServiceSettings, hub: HubJobs) -> None:
        self.settings = settings
        self.hub = hub
        self._store: ObjectStore | None = None
        self._store_lock = threading.Lock()
        self._ready: dict[str, tuple[float, OwnedJob]] = {}
        # A finished job's folder by (job id, status, the hub's stamp of the move): ingest wrote
        # all it writes before the move, so one listing serves every later look (the retention
        # task's roll-up of its series changes its bytes by little; a new stamp lists again).
        self._folders: dict[tuple[str, str, str], FolderFacts] = {}

    def store(self, domain_id: str, user_id: str) -> ObjectStore:
        """The store rooted at ``{storage_url}/{domain_id}/{user_id}/``; ``Unauthorized`` when the
        hub names someone other than this app's owner."""
        if user_id != self.settings.owner_id:
            raise Unauthorized("the hub listed jobs of someone else")
        with self._store_lock:
            if self._store is None:
                if not self.settings.storage_url:
                    raise NotFound("This app has no storage configured (PROFILERHUB_APP_STORAGE_URL)")
                root = self.settings.storage_url.rstrip("/") + "/" + layout.user_prefix(domain_id, user_id)
                self._store = open_store(root, s3_endpoint_url=self.settings.s3_endpoint_url or None)
            return self._store

    def _page(
        self, token: str, job_id: str | None = None, query: dict[str, str] | None = None
    ) -> tuple[ObjectStore, dict[str, Any]]:
        doc = self.hub.owner_jobs(token, job_id, query)
        store = self.store(str(doc.get("domain_id", "")), str(doc.get("user_id", "")))
        doc["items"] = [item for item in doc["items"] if isinstance(item, dict) and item.get("job_id")]
        return store, doc

    def job(self, token: str, job_id: str) -> OwnedJob:
        """The owner's job ``job_id`` as the hub records it; ``NotFound`` when the hub lists no such job."""
        if "/" in job_id or not layout.is_id(job_id):
            raise NotFound(f"Job '{job_id}' not found")
        store, doc = self._page(token, job_id)
        for item in doc["items"]:
            if item["job_id"] == job_id:
                return OwnedJob(store, item)
        raise NotFound(f"Job '{job_id}' not found")

    def ready_job(self, token: str, job_id: str, *, running: bool = False) -> OwnedJob:
        """The owner's Ready job ``job_id`` (``NotFound`` otherwise; with ``running``, a job still
        InProgress too: its captures ingested so far are its traces), as the hub said at most
        ``READY_SECONDS`` ago."""
        now = time.monotonic()
        seen = self._ready.get(job_id)
        if seen is not None and now - seen[0] < READY_SECONDS and (running or seen[1].ready):
            return seen[1]
        job = self.job(token, job_id)
        if not job.ready and not (running and job.record.get("status") == "InProgress"):
            raise NotFound(f"Job '{job_id}' is not Ready yet (status {job.record.get('status')})")
        if len(self._ready) > 1000:
            self._ready.clear()
        self._ready[job_id] = (now, job)
        return job

    def page(self, token: str, query: dict[str, str]) -> dict[str, Any]:
        """One page of the owner's jobs as the hub lists them (newest first unless sorted), with what
        storage holds of each: ``{"items", "next_token", "total", "status_counts"}``. ``query``: the
        :data:`LIST_PARAMS` given (``limit`` defaults to :data:`DEFAULT_LIMIT`)."""
        query = {k: v for k in LIST_PARAMS if (v := query.get(k))}
        query.setdefault("limit", str(DEFAULT_LIMIT))
        store, doc = self._page(token, None, query)
        return {
            "items": [self._describe(store, item) for item in doc["items"]],
            "next_token": doc.get("next_token"),
            "total": doc.get("total", len(doc["items"])),
            "status_counts": doc.get("status_counts", {}),
        }

    def described(self, token: str, job_id: str) -> dict[str, Any]:
        """One job as the list shows it."""
        job = self.job(token, job_id)
        return self._describe(job.store, job.record)

    def _describe(self, store: ObjectStore, record: dict[str, Any]) -> dict[str, Any]:
        status, stamp = record.get("status"), record.get("updated_at")
        if status not in ("Ready", "Failed") or not stamp:
            return describe(store, record)
        key = (str(record["job_id"]), str(status), str(stamp))
        listed = self._folders.get(key)
        if listed is None:
            listed = list_folder(store, key[0])
            if len(self._folders) >= FOLDERS_KEPT:
                self._folders.clear()
            self._folders[key] = listed
        return describe(store, record, listed)

    def summary_bytes(self, token: str, job_id: str) -> bytes:
        """The job's ``processed/summary.json`` as stored; ``NotFound`` until the job is Ready."""
        job = self.job(token, job_id)
        if not job.ready:
            raise NotFound("not Ready")
        return job.store.get(job.processed(SUMMARY))


def _json(store: ObjectStore, key: str) -> dict[str, Any]:
    try:
        doc = json.loads(store.get(key))
    except (NotFound, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


#: Folder listings of finished jobs kept (``FolderFacts``), at most.
FOLDERS_KEPT = 4096


@dataclass(frozen=True)
class FolderFacts:
    """What one listing of a job's folder says: the names under it, their bytes, the first upload."""

    keys: frozenset[str]
    total: int
    first: datetime | None


def list_folder(store: ObjectStore, job_id: str) -> FolderFacts:
    """List job ``job_id``'s folder once (a job of many ranks holds thousands of objects: its
    traces' timeline files)."""
    folder = owner_job_prefix(job_id)
    keys, total, first = set(), 0, None
    for info in store.list(folder):
        keys.add(info.key.removeprefix(folder))
        total += info.size
        first = info.modified if first is None else min(first, info.modified)
    return FolderFacts(frozenset(keys), total, first)


def describe(store: ObjectStore, record: dict[str, Any], listed: FolderFacts | None = None) -> dict[str, Any]:
    """One job of the list: the hub's record, plus what its folder holds (``listed``, else listed now)."""
    job_id = str(record["job_id"])
    folder = owner_job_prefix(job_id)
    found = listed if listed is not None else list_folder(store, job_id)
    keys, total, first = found.keys, found.total, found.first
    status = record.get("status", "InProgress")
    facts = {k: record.get(k) for k in FACTS}  # the hub's row (what it sorts by)
    if status == "Ready" and all(v is None for v in facts.values()):
        # a job ingested before the hub kept these: what ingest wrote in its folder
        written = _json(store, folder + processed_name(STATUS)).get("facts")
        if isinstance(written, dict):
            facts = {k: written.get(k) for k in FACTS}
    progress = None
    if status == "Processing" and processed_name(PROGRESS) in keys:  # a fanned-out ingest's count
        doc = _json(store, folder + processed_name(PROGRESS))
        progress = {k: doc[k] for k in PROGRESS_FIELDS if isinstance(doc.get(k), int)} or None
    return {
        "job_id": job_id,
        "name": record.get("name"),
        "status": status,
        "failure_reason": record.get("failure_reason"),
        # where a completed job waits in the ingest queue (the hub's word, read as it is asked)
        "status_reason": record.get("status_reason"),
        "warnings": list(record.get("warnings") or []),
        # the hub's stamp of the move to Ready/Failed (what the list's "Finished" sorts by)
        "finished_at": record.get("updated_at") if status in ("Ready", "Failed") else None,
        "created_at": record.get("created_at"),
        "completed_at": record.get("completed_at"),
        # a person's or a rule's request that the run stop, and the captures asked (the hub's)
        "stop_request": record.get("stop_request"),
        "captures": list(record.get("captures") or []),
        "first_upload_at": first.isoformat() if first is not None else record.get("created_at"),
        "raw_files": sum(1 for k in keys if k.startswith("raw/")),
        "bytes": total,
        "has_summary": processed_name(SUMMARY) in keys,
        # while Processing: traces (and their stored bytes) ingested so far, of the job's
        "progress": progress,
        # what ingest found for the list (steps, ranks, GPUs, duration); None until Ready
        **facts,
    }


__all__ = [
    "DEFAULT_LIMIT",
    "FOLDERS_KEPT",
    "LIST_PARAMS",
    "READY_SECONDS",
    "FolderFacts",
    "OwnedJob",
    "OwnedJobs",
    "describe",
    "list_folder",
]
