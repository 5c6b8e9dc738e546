"""Writing what ingest made under a job's ``processed/``: the summary, the status (for readers of
storage alone, the profiler app), the rule results (final, and the live scan's latest) and the
series; and JSON-ready values for the row. (A trace's views are ``views.put_trace``'s; the live
scan's own files, ``live/``, are ``live_rules``'. Names: ``profilerhub_core.storage.layout``.)"""

from __future__ import annotations

from typing import Any

import orjson

from profilerhub_analysis.rank_activity import overview
from profilerhub_analysis.ranks import rank_table
from profilerhub_analysis.series import JobSeries, pack
from profilerhub_core.db.models import JobStatus, utcnow
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.storage import ObjectStore
from profilerhub_core.storage.layout import RANKS, RULES, SERIES, STATUS, SUMMARY


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


def put_summary(store: ObjectStore, place: JobPlace, summary: dict[str, Any]) -> None:
    """``processed/summary.json``: the full summary (the row keeps a compact copy)."""
    body = orjson.dumps(summary, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    store.put(place.processed_key(SUMMARY), body)


def put_ranks(store: ObjectStore, place: JobPlace, summary: dict[str, Any]) -> None:
    """``processed/ranks.json``: the ranks table and stragglers (``ranks.rank_table``) and the
    all-ranks overview (``rank_activity.overview``) of the summary's traces, computed once here, at
    the join. Each trace entry's ``activity`` moves into the overview: the summary, which every page
    of the job reads, does not carry it."""
    traces = summary.get("traces", [])
    doc = rank_table([t["report"] for t in traces])
    doc["overview"] = overview(traces)
    for entry in traces:
        entry.pop("activity", None)
    store.put(place.processed_key(RANKS), orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY))


def put_rules(store: ObjectStore, place: JobPlace, results: dict[str, Any]) -> None:
    """``processed/rules.json``: the latest rule results, final at ingest, live while the run goes on."""
    store.put(place.processed_key(RULES), orjson.dumps(results, option=orjson.OPT_SERIALIZE_NUMPY))


def put_series(store: ObjectStore, place: JobPlace, series: JobSeries) -> None:
    """``processed/series.npz``: the job's series at full resolution."""
    store.put(place.processed_key(SERIES), pack(series))


__all__ = ["plain", "put_rules", "put_series", "put_status", "put_summary"]
