"""Writing what ingest made: the event stores, ``processed/status.json`` (for readers of storage
alone, the profiler app) and JSON-ready values for the row."""

from __future__ import annotations

from typing import Any

import orjson

from profilerhub_analysis.store import EventStore
from profilerhub_core.db.models import JobStatus, utcnow
from profilerhub_core.jobstorage import STATUS, JobPlace
from profilerhub_core.storage import ObjectStore


def put_status(
    store: ObjectStore,
    place: JobPlace,
    name: str,
    status: JobStatus,
    reason: str = "",
    facts: dict[str, Any] | None = None,
) -> None:
    """``processed/status.json``: the outcome, for readers of storage alone (the profiler app),
    with a Ready job's ``facts`` (steps, ranks, GPUs, duration: ``summary.job_facts``) for its list."""
    doc: dict[str, Any] = {
        "job_id": place.job_id,
        "name": name,
        "status": status.value,
        "failure_reason": reason or None,
        "finished_at": utcnow().isoformat(),
    }
    if facts is not None:
        doc["facts"] = facts
    store.put(place.processed_key(STATUS), orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY))


def plain(value: Any) -> Any:
    """JSON-ready plain Python (numpy scalars and arrays become numbers and lists; NaN -> null)."""
    return orjson.loads(orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS))


def put_event_store(store: ObjectStore, place: JobPlace, folder: str, event_store: EventStore) -> None:
    for name, data in event_store.to_files().items():
        store.put(place.processed_key(f"{folder}/{name}"), data)


__all__ = ["plain", "put_event_store", "put_status"]
