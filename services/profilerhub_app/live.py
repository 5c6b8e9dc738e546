"""What a job still running has streamed so far: its steps, annotations, metrics, system samples.

The SDK uploads ``raw/annotations|metrics|system/*.jsonl.gz`` chunks while the run goes on; the
live view decodes them with the same structs and summarises them with the same functions as
ingest (``profilerhub_analysis.sdk_records``), so a running job's numbers are those its summary
will have. Chunks never change once written, so each is decoded once and kept (bounded); a poll
every few seconds reads only the chunks that are new.

``captures`` lists the on-demand captures ingested while the run goes on (the worker's
``ingest.captures``), each with the ``trace`` index the timeline and views routes take for it.

``panels`` holds the dashboard panels the streamed records make (``step_time`` from the SDK's
steps, ``annotations`` with a histogram per name), assembled by the engine's ``dashboard`` as the
Ready dashboard's are, so a live page draws them with the same code.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections import OrderedDict
from typing import Any

import msgspec

from profilerhub_analysis.dashboard import dashboard
from profilerhub_analysis.sdk_records import (
    AnnotationRecord,
    MetricRecord,
    SystemSample,
    steps_and_annotations,
    system_metrics,
    training_metrics,
)
from profilerhub_app.owned import OwnedJob
from profilerhub_core.errors import NotFound
from profilerhub_core.storage import layout

KINDS = ("annotations", "metrics", "system")
#: The dashboard panels a live view carries (the rest need a trace, which ingest reads).
LIVE_PANELS = ("step_time", "annotations")
#: A chunk larger than this once decompressed is skipped (counted in ``skipped_chunks``).
MAX_CHUNK_BYTES = 64 << 20
#: Newest chunks read per kind (a very long run shows its latest part).
MAX_CHUNKS = 2000
#: Decoded chunks kept across polls.
CACHE_CHUNKS = 4000
_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    "annotations": msgspec.json.Decoder(AnnotationRecord),
    "metrics": msgspec.json.Decoder(MetricRecord),
    "system": msgspec.json.Decoder(SystemSample),
}


class LiveView:
    """Decodes and caches SDK chunks; one per app."""

    def __init__(self) -> None:
        self._chunks: OrderedDict[tuple[str, int], list[Any]] = OrderedDict()
        self._lock = threading.Lock()

    def _records(self, job: OwnedJob, kind: str, key: str, size: int) -> list[Any] | None:
        with self._lock:
            cached = self._chunks.get((key, size))
            if cached is not None:
                self._chunks.move_to_end((key, size))
                return cached
        try:
            inflater = zlib.decompressobj(wbits=31)
            data = inflater.decompress(job.store.get(key), MAX_CHUNK_BYTES + 1)
            if len(data) > MAX_CHUNK_BYTES or not inflater.eof:
                return None  # too large, or still being written (truncated)
            records = _DECODERS[kind].decode_lines(data)
        except (zlib.error, msgspec.MsgspecError, NotFound):
            return None
        with self._lock:
            self._chunks[(key, size)] = records
            while len(self._chunks) > CACHE_CHUNKS:
                self._chunks.popitem(last=False)
        return records

    def view(self, job: OwnedJob) -> dict[str, Any]:
        """``{"job_id", "status", "steps", "annotations", "metrics", "system", "panels", "chunks", ...}``."""
        raw = job.key(layout.RAW) + "/"
        by_kind: dict[str, list[tuple[str, int]]] = {k: [] for k in KINDS}
        job_doc: dict[str, Any] = {}
        for info in job.store.list(raw):
            rel = info.key[len(raw) :]
            top = rel.split("/", 1)[0]
            if top in by_kind and "/" in rel and rel.endswith(".jsonl.gz"):
                by_kind[top].append((info.key, info.size))
            elif rel == "job.json":
                try:
                    doc = json.loads(job.store.get(info.key))
                    job_doc = doc if isinstance(doc, dict) else {}
                except (ValueError, NotFound):
                    job_doc = {}
        decoded: dict[str, list[Any]] = {k: [] for k in KINDS}
        skipped = 0
        for kind, chunks in by_kind.items():
            for key, size in sorted(chunks)[-MAX_CHUNKS:]:
                records = self._records(job, kind, key, size)
                if records is None:
                    skipped += 1
                else:
                    decoded[kind].extend(records)
        start = job_doc.get("start_ns") if isinstance(job_doc.get("start_ns"), int) else None
        steps, annotations = steps_and_annotations(decoded["annotations"])
        metrics = training_metrics(decoded["metrics"], start)
        system = system_metrics(decoded["system"], start)
        streamed = {"steps": steps, "annotations": annotations}
        panels = dashboard({}, {}, streamed)
        return {
            "job_id": job.job_id,
            "status": job.record.get("status"),
            "run_status": job_doc.get("status"),
            "start_ns": start,
            "steps": steps,
            "annotations": annotations,
            "metrics": metrics,
            "system": system,
            "panels": {k: panels[k] for k in LIVE_PANELS},
            "chunks": {k: len(v) for k, v in by_kind.items()},
            "skipped_chunks": skipped,
            "captures": _captures(job),
        }


def _captures(job: OwnedJob) -> list[dict[str, Any]]:
    """The on-demand captures ingested so far (``processed/live/captures.json``), each with the
    ``index`` the timeline and views routes take for it (``trace=``), or the reason it could not
    be read (``error``)."""
    try:
        doc = json.loads(job.store.get(job.processed(layout.LIVE_CAPTURES)))
    except (NotFound, ValueError):
        return []
    out, index = [], 0
    for entry in doc.get("traces") or [] if isinstance(doc, dict) else []:
        if not isinstance(entry, dict):
            continue
        report = entry.get("report") or {}
        shown = {"capture": entry.get("capture"), "file": entry.get("file"), "error": entry.get("error")}
        if not entry.get("error"):
            steps = report.get("steps")
            shown |= {"index": index, "steps": len(steps) if isinstance(steps, list) else None}
            index += 1
        out.append(shown)
    return out


__all__ = ["LiveView"]
