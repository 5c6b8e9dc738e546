"""A running job's on-demand captures, ingested as they arrive: ``ingest_captures(job_id, ctx)``.

A capture asked of a running job (``POST …/jobs/{id}/captures``, ``UpdateTrainingJob``) comes back
as one more trace, ``raw/torch/<host>_<pid>.capture-<id>.<n>.pt.trace.json.gz``
(``layout.capture_id``). So that its timeline and views can be opened while the run goes on, each
capture trace not ingested yet is read as ingest reads any trace (same limits, same reader, same
views: ``views.put_trace`` and ``put_tb_views``) into ``processed/live/captures/<id>/``, and its
summary entry (``capture``: the id) is added to ``processed/live/captures.json``
(``layout.LIVE_CAPTURES``), which is rewritten after each, so a reader sees only whole folders.

Idempotent and cheap when there is nothing new (one listing of ``raw/torch/`` and one small
read): the hub sends the task when a capture trace is uploaded through it, and the live scan
sends it for a running job with captures asked (a presigned upload passes no hub). Two tasks of
one job at once may read the same capture twice; each writes the list re-read just before, so an
entry the other added is kept (in the rare case both write at once, one entry may be lost until
the live scan's next task reads that capture again). A trace that
cannot be read is recorded with its reason (``error``) and not tried again. Only a job still
running is read; the job's own ingest later empties ``processed/`` and reads the capture traces
again with the others, so the Ready job holds them as ordinary traces.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import msgspec
import orjson

from profilerhub_analysis.build import load_trace
from profilerhub_analysis.errors import TraceError
from profilerhub_core.db.models import Job
from profilerhub_core.errors import NotFound
from profilerhub_core.jobstorage import JobPlace, place_of
from profilerhub_core.records.jobs import is_running
from profilerhub_core.storage import layout
from profilerhub_worker.ingest import summary as sm
from profilerhub_worker.ingest.context import IngestContext
from profilerhub_worker.ingest.limits import PARSE_MEMORY_FACTOR, OverLimit, copy_dir, inflate_to_file
from profilerhub_worker.ingest.views import put_tb_views, put_trace
from profilerhub_worker.ingest.write import plain

log = logging.getLogger("profilerhub_worker.ingest")


def _ingested(ctx: IngestContext, place: JobPlace) -> list[dict[str, Any]]:
    try:
        doc = json.loads(ctx.store.get(place.processed_key(layout.LIVE_CAPTURES)))
    except (NotFound, ValueError):
        return []
    traces = doc.get("traces") if isinstance(doc, dict) else None
    return [t for t in traces if isinstance(t, dict)] if isinstance(traces, list) else []


def ingest_captures(job_id: str, ctx: IngestContext) -> int:
    """Ingest the running job's capture traces not ingested yet; how many were added (0: none new,
    or the job is no longer running)."""
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        if job is None or not is_running(job):
            return 0
        place = place_of(job)
    entries = _ingested(ctx, place)
    seen = {str(e.get("file")) for e in entries}
    added = 0
    with copy_dir() as tmp:
        for info in ctx.store.list(place.raw_prefix + "torch/"):
            rel = layout.relative_name(info.key, place.raw_prefix)
            capture = layout.capture_id(rel)
            if capture is None or rel in seen:
                continue
            entry = _read(ctx, place, rel, capture, info.key, info.size, Path(tmp))
            # another task may have added one meanwhile (the hub's and the live scan's): keep it
            entries = _ingested(ctx, place)
            if rel not in {str(e.get("file")) for e in entries}:
                entries.append(entry)
            ctx.store.put(place.processed_key(layout.LIVE_CAPTURES), orjson.dumps({"traces": entries}))
            added += 1
    return added


def _read(
    ctx: IngestContext, place: JobPlace, rel: str, capture: str, key: str, size: int, tmp: Path
) -> dict[str, Any]:
    """One capture trace read into its folder; its summary entry (with ``error`` if it could not be)."""
    folder = f"{layout.LIVE_CAPTURE_FOLDER}/{capture}"
    local = tmp / rel.rsplit("/", 1)[-1]
    try:
        if size > ctx.max_file_bytes:
            raise OverLimit(f"raw/{rel}: {size} bytes is over the per-file limit of {ctx.max_file_bytes}")
        inflated = inflate_to_file(
            ctx.store, key, local, ctx.max_trace_bytes, f"raw/{rel}", ctx.max_inflate_ratio
        )
        with ctx.memory.reserve(int(inflated * PARSE_MEMORY_FACTOR), f"raw/{rel}"):
            events = load_trace(local, inflated)
            entry = sm.trace_summary(rel, events)
            put_trace(ctx.store, place, folder, events, entry)
            kineto = events.meta.producer == "kineto"
            del events
            if kineto:
                put_tb_views(ctx.store, place, folder, entry, local, inflated)
    except (OverLimit, TraceError, msgspec.MsgspecError, ValueError, RecursionError) as exc:
        reason = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        log.info("job %s: capture %s left out: %s", place.job_id, capture, reason)
        return {"file": rel, "capture": capture, "error": reason[:300]}
    finally:
        local.unlink(missing_ok=True)
    log.info("job %s: capture %s ingested while the run goes on", place.job_id, capture)
    return {**plain(entry), "capture": capture}


__all__ = ["ingest_captures"]
