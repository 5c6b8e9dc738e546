"""The storage sweeper: delete the folders no row owns any more.

The hub deletes a job's, a user's or a domain's objects right after the row's delete commits. A
crash or a storage outage between the two leaves objects behind; nobody can reach them (keys are
ids, and the app shows only jobs the hub lists), but they take space and a quota. The sweeper,
run by beat every ``storage_sweep_seconds``, walks the store once and removes, for each key
``{domain_id}/{user_id}/jobs/{job_id}/…``, the folder of the first part whose row is gone:
the domain's, else the user's, else the job's.

Only keys of that shape whose three ids look like the hub's (UUIDs) are considered; anything else
in the bucket (another tool's files, an SDK S3 sink's ``prefix/<job>/``) is left alone. The ids
are read before the walk, and a folder is removed only when its newest object is older than
``grace``: a row is committed before its first object is written, so a folder written since the
ids were read is never taken for an orphan.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import Domain, Job, UserProfile
from profilerhub_core.storage import ObjectStore

log = logging.getLogger("profilerhub.worker")

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
DEFAULT_GRACE = timedelta(minutes=10)


def _folder_of(key: str, domains: set[str], users: set[str], jobs: set[str]) -> str | None:
    """The orphaned folder ``key`` lies in, or None when it is owned or not the hub's shape."""
    parts = key.split("/")
    if len(parts) < 5 or parts[2] != "jobs" or not all(_UUID.fullmatch(p) for p in parts[:2] + parts[3:4]):
        return None
    domain_id, user_id, _, job_id = parts[:4]
    if domain_id not in domains:
        return f"{domain_id}/"
    if user_id not in users:
        return f"{domain_id}/{user_id}/"
    if job_id not in jobs:
        return f"{domain_id}/{user_id}/jobs/{job_id}/"
    return None


def sweep_storage(
    sessions: Callable[[], Session],
    store: ObjectStore,
    *,
    grace: timedelta = DEFAULT_GRACE,
    now: datetime | None = None,
) -> dict[str, int]:
    """Remove orphaned folders; ``{"folders": n, "objects": m}`` removed."""
    with sessions() as session:
        domains = set(session.scalars(sa.select(Domain.id)))
        users = set(session.scalars(sa.select(UserProfile.id)))
        jobs = set(session.scalars(sa.select(Job.id)))
    newest: dict[str, datetime] = {}
    for info in store.list(""):
        folder = _folder_of(info.key, domains, users, jobs)
        if folder is not None:
            newest[folder] = max(newest.get(folder, info.modified), info.modified)
    cutoff = (now or datetime.now(UTC)) - grace
    removed = {"folders": 0, "objects": 0}
    for folder, changed in sorted(newest.items()):
        if changed > cutoff:
            continue  # written lately: looked at again next sweep
        removed["objects"] += store.delete_prefix(folder)
        removed["folders"] += 1
    if removed["folders"]:
        log.info("storage sweep: removed %(objects)d object(s) in %(folders)d orphaned folder(s)", removed)
    return removed


__all__ = ["DEFAULT_GRACE", "sweep_storage"]
