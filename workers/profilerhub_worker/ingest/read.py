"""Reading a job's raw files: stream, check and parse each one into the summary.

A file over the size limit, truncated gzip, bad JSON or a trace the analysis engine cannot read
raises ``BadUpload`` with a reason naming the file; traces go through a private temporary
directory, one at a time, and each trace's event store is handed on as soon as it is built.
"""

from __future__ import annotations

import json
import re
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from profilerhub_analysis.build import load_trace
from profilerhub_analysis.errors import TraceError
from profilerhub_analysis.store import EventStore
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.storage import ObjectStore, layout
from profilerhub_worker.ingest import summary as sm
from profilerhub_worker.ingest.context import BadUpload, IngestContext

SUMMARY_FORMAT = "profilerhub-summary/1"
CHUNK_KINDS = ("annotations", "metrics", "system")
TRACE_SUFFIXES = (".json", ".json.gz")
_ANNOTATIONS = msgspec.json.Decoder(sm.AnnotationRecord)
_METRICS = msgspec.json.Decoder(sm.MetricRecord)
_SAMPLES = msgspec.json.Decoder(sm.SystemSample)


def _kind(rel: str) -> str:
    top = rel.split("/", 1)[0]
    if rel == "job.json":
        return "job"
    if top in CHUNK_KINDS and "/" in rel and rel.endswith(".jsonl.gz"):
        return top
    if rel.endswith(TRACE_SUFFIXES) and top not in CHUNK_KINDS:
        return "trace"
    return "other"


def _reason(rel: str, exc: Exception) -> str:
    text = getattr(exc, "message", None) or str(exc)
    name = rel.rsplit("/", 1)[-1]
    text = text.removeprefix(f"{name}: ")
    return f"raw/{rel}: {text}"


def _fetch(store: ObjectStore, key: str, target: Path) -> None:
    with target.open("wb") as fh:
        for chunk in store.stream(key):
            fh.write(chunk)


def build_summary(
    ctx: IngestContext,
    place: JobPlace,
    job: dict[str, Any],
    save: Callable[[str, EventStore, dict[str, Any]], None],
) -> dict[str, Any]:
    """Read and check every raw file and return the summary; each trace's event store is handed
    to ``save(folder, store, entry)`` with its summary entry as soon as it is built (so one trace
    at a time is in memory); ``save`` may add keys to the entry.

    Raises ``BadUpload`` naming the first file that cannot be ingested.
    """
    objects = list(ctx.store.list(place.raw_prefix))
    if not objects:
        raise BadUpload("No raw files were uploaded for this job")
    files: dict[str, list[str]] = {}
    annotations: list[sm.AnnotationRecord] = []
    metrics: list[sm.MetricRecord] = []
    samples: list[sm.SystemSample] = []
    job_doc: dict[str, Any] = {}
    traces: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="profilerhub-ingest-") as tmp:
        for info in objects:
            rel = layout.relative_name(info.key, place.raw_prefix)
            kind = _kind(rel)
            files.setdefault(kind, []).append(rel)
            if kind == "other":
                continue
            if info.size > ctx.max_file_bytes:
                raise BadUpload(
                    f"raw/{rel}: {info.size} bytes is over the per-file limit of {ctx.max_file_bytes}"
                )
            try:
                if kind == "trace":
                    # Traces go through a file: the reader streams and caps the decompression.
                    local = Path(tmp) / rel.rsplit("/", 1)[-1]  # the reader's messages name the file
                    _fetch(ctx.store, info.key, local)
                    try:
                        store = load_trace(local, ctx.max_trace_bytes)
                    finally:
                        local.unlink(missing_ok=True)
                    folder = trace_folder(len(traces), rel)
                    entry = sm.trace_summary(rel, store) | {"event_store": f"processed/{folder}/"}
                    save(folder, store, entry)
                    traces.append(entry)
                    continue
                data = ctx.store.get(info.key)  # small: job.json and the SDK's chunks
                if kind == "job":
                    job_doc = _job_doc(data)
                    continue
                data = gunzip(data, ctx.max_trace_bytes)
                if kind == "annotations":
                    annotations.extend(_ANNOTATIONS.decode_lines(data))
                elif kind == "metrics":
                    metrics.extend(_METRICS.decode_lines(data))
                else:
                    samples.extend(_SAMPLES.decode_lines(data))
            except (TraceError, msgspec.MsgspecError, ValueError) as exc:
                raise BadUpload(_reason(rel, exc)) from exc
    steps, annotated = sm.steps_and_annotations(annotations)
    start_ns = job_doc.get("start_ns") if isinstance(job_doc.get("start_ns"), int) else None
    summary = {
        "format": SUMMARY_FORMAT,
        # The SDK rewrites job.json as Completed in finish(); still InProgress: the run died.
        "partial": job_doc.get("status") == "InProgress",
        "job": _job_section(job, job_doc),
        "files": {kind: len(names) for kind, names in sorted(files.items())},
        "ignored_files": files.get("other", [])[:100],
        "steps": steps,
        "annotations": annotated,
        "metrics": sm.training_metrics(metrics, start_ns),
        "system": sm.system_metrics(samples, start_ns),
        "traces": traces,
    }
    return summary


def gunzip(data: bytes, limit: int) -> bytes:
    """Decompress a whole gzip member (``ValueError`` when it is not gzip, truncated or over ``limit``)."""
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise ValueError(f"not a valid gzip file ({exc})") from exc
    if len(out) > limit:
        raise ValueError(f"larger than the {limit} byte limit once decompressed")
    if not inflater.eof:
        raise ValueError("gzip data is truncated (the file ended early)")
    return out


def _job_doc(data: bytes) -> dict[str, Any]:
    doc = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object; the SDK writes job.json as one")
    return doc


def _job_section(job: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "host",
        "pid",
        "rank",
        "world_size",
        "sdk_version",
        "python",
        "torch_version",
        "start_ns",
        "end_ns",
    )
    out = {"name": job["name"], "metric_definitions": job["metric_definitions"]}
    out.update({k: doc.get(k) for k in keep if k in doc})
    start, end = doc.get("start_ns"), doc.get("end_ns")
    if isinstance(start, int) and isinstance(end, int):
        out["duration_s"] = round((end - start) / 1e9, 3)
    if isinstance(doc.get("dropped"), dict):
        out["sdk_dropped"] = doc["dropped"]
    return out


def trace_folder(index: int, rel: str) -> str:
    """``traces/<n>-<name>``: where trace number ``index`` of a job goes under ``processed/``."""
    return f"traces/{index}-{_safe(rel)}"


def _safe(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    for suffix in (".json.gz", ".json"):
        name = name.removesuffix(suffix)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:100] or "trace"


__all__ = ["SUMMARY_FORMAT", "build_summary", "gunzip", "trace_folder"]
