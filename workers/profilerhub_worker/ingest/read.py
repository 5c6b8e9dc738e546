"""Reading a job's raw files: stream, check and parse each one into the summary.

A file over a size limit (``limits``), truncated gzip, bad or too deeply nested JSON or a trace
the analysis engine cannot read is left out with a warning naming it and saying why; the job is
``Ready`` with the rest and its summary's ``warnings`` lists them. Only when no file at all could
be read is it ``BadUpload`` (the job ``Failed``), with the first file's reason. Every file is
inflated to a private temporary directory first (capped as it streams), then parsed under a
reservation of the worker's ingest memory; each trace's event store is handed on as soon as it is
built, so one file at a time is in memory.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import msgspec

from profilerhub_analysis import scratch
from profilerhub_analysis.build import load_trace
from profilerhub_analysis.errors import TraceError
from profilerhub_analysis.rules.job import evaluate_job, job_series
from profilerhub_analysis.store import EventStore
from profilerhub_analysis.tensor_records import records_of_lines
from profilerhub_analysis.tensors import TensorTable
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.storage import layout
from profilerhub_worker.ingest import summary as sm
from profilerhub_worker.ingest.context import BadUpload, IngestContext
from profilerhub_worker.ingest.limits import PARSE_MEMORY_FACTOR, OverLimit, copy_dir, inflate_to_file
from profilerhub_worker.ingest.memory import TracePeak, trace_memory
from profilerhub_worker.ingest.ranks import with_other_ranks
from profilerhub_worker.ingest.write import put_series

#: ``fan_out(traces, annotations)``: see ``build_summary``.
FanOut = Callable[[list[tuple[int, str, str, int]], list[sm.AnnotationRecord]], list[dict[str, Any]]]
SUMMARY_FORMAT = "profilerhub-summary/1"
MAX_WARNINGS = 100
log = logging.getLogger("profilerhub_worker.ingest")
CHUNK_KINDS = ("annotations", "metrics", "system", layout.RAW_TENSORS)
LOGS = "logs"
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
    if top == LOGS and rel.endswith(".jsonl.gz"):
        return LOGS  # the printed lines: read by the hub's log routes, not by ingest
    if rel.startswith(f"{layout.RAW_TENSORS}/full/") and rel.endswith(".npy"):
        return "full_tensor"  # read on demand (the trial, the tensors API), not at ingest
    if rel.endswith(TRACE_SUFFIXES) and top not in CHUNK_KINDS:
        return "trace"
    return "other"


def tensor_table(records: list[dict[str, Any]], warnings: list[str]) -> TensorTable | None:
    """The job's ``TensorTable`` of ``ph.watch``'s records; None without any."""
    if not any(r.get("kind", "reductions") == "reductions" for r in records):
        return None
    try:
        return TensorTable.from_records(records)
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        warnings.append(f"raw/{layout.RAW_TENSORS}/: a record ingest cannot read ({exc!r})"[:300])
        return None


def _reason(rel: str, exc: Exception) -> str:
    text = getattr(exc, "message", None) or str(exc)
    name = rel.rsplit("/", 1)[-1]
    text = text.removeprefix(f"{name}: ")
    return f"raw/{rel}: {text}"


def build_summary(
    ctx: IngestContext,
    place: JobPlace,
    job: dict[str, Any],
    save: Callable[[str, EventStore, dict[str, Any], list[sm.AnnotationRecord]], None],
    parsing: Callable[[int], AbstractContextManager[None]] = lambda _size: nullcontext(),
    save_views: Callable[[str, dict[str, Any], Path, int], None] = lambda *_: None,
    fan_out: FanOut | None = None,
) -> dict[str, Any]:
    """Read and check every raw file and return the summary; each trace's event store is handed
    to ``save(folder, store, entry, annotations)`` with its summary entry as soon as it is built
    (so one trace at a time is in memory), with the SDK's annotation records (traces are read
    after every SDK file, so all of them); ``save`` may add keys to the entry. Then, with the event
    store gone, ``save_views(folder, entry, decompressed file, size)`` writes what is read from the
    document itself (the TensorBoard plugin's views), so the two never share memory. Each file is parsed
    inside ``parsing(decompressed_size)`` (the claim's heartbeat keeps it live meanwhile).

    With ``fan_out``, the traces are not read here: ``fan_out(traces, annotations)`` is given
    ``(n, key, rel, stored size)`` of each, in order, and returns each one's part (``fanout``:
    ``entry``, or a ``warning`` when it was left out, and its decompressed ``size``), in order;
    the per-job limit is then applied to the parts in that order.

    Raises ``BadUpload`` when no file could be read (naming the first that could not).
    """
    objects = list(ctx.store.list(place.raw_prefix))
    # Traces last (stable: key order otherwise), so each is saved with all the SDK's records.
    objects.sort(key=lambda info: _kind(layout.relative_name(info.key, place.raw_prefix)) == "trace")
    if not objects:
        raise BadUpload("No raw files were uploaded for this job")
    files: dict[str, list[str]] = {}
    annotations: list[sm.AnnotationRecord] = []
    metrics: list[sm.MetricRecord] = []
    samples: list[sm.SystemSample] = []
    tensor_records: list[dict[str, Any]] = []
    job_doc: dict[str, Any] = {}
    traces: list[dict[str, Any]] = []
    warnings: list[str] = []
    read = 0
    job_left = ctx.max_ingest_bytes
    trace_files: list[tuple[int, str, str, int]] = []
    with copy_dir() as tmp:
        for info in objects:
            rel = layout.relative_name(info.key, place.raw_prefix)
            kind = _kind(rel)
            files.setdefault(kind, []).append(rel)
            if kind in ("other", LOGS, "full_tensor"):
                continue
            if info.size > ctx.max_file_bytes:
                warnings.append(
                    f"raw/{rel}: {info.size} bytes is over the per-file limit of {ctx.max_file_bytes}"
                )
                continue
            if kind == "trace" and fan_out is not None:
                trace_files.append((len(trace_files), info.key, rel, info.size))
                continue
            local = Path(tmp) / rel.rsplit("/", 1)[-1]  # the reader's messages name the file
            try:
                if kind == "trace":
                    folder = layout.trace_folder(len(traces), rel)
                    entry, size, _ = read_trace(
                        ctx, info.key, rel, local, job_left, folder,
                        lambda f, store, e: save(f, store, e, annotations), save_views, parsing,
                    )  # fmt: skip
                    job_left -= size
                    traces.append(entry)
                    read += 1
                    continue
                size = _inflate(ctx, info.key, local, rel, job_left)
                job_left -= size
                with ctx.memory.reserve(int(size * PARSE_MEMORY_FACTOR), f"raw/{rel}"), parsing(size):
                    data = local.read_bytes()
                    if kind == "job":
                        job_doc = _job_doc(data)
                    elif kind == "annotations":
                        annotations.extend(_ANNOTATIONS.decode_lines(data))
                    elif kind == "metrics":
                        metrics.extend(_METRICS.decode_lines(data))
                    elif kind == layout.RAW_TENSORS:
                        tensor_records.extend(records_of_lines(data))
                    else:
                        samples.extend(_SAMPLES.decode_lines(data))
                    del data
                read += 1
            except LEFT_OUT as exc:
                warnings.append(left_out(rel, exc))
            finally:
                local.unlink(missing_ok=True)
    if fan_out is not None and trace_files:
        for part in fan_out(trace_files, annotations):
            if part.get("warning"):
                warnings.append(part["warning"])
            elif part["size"] > job_left:
                warnings.append(_over_job_limit(ctx, part["rel"]))
            else:
                job_left -= part["size"]
                traces.append(part["entry"])
                read += 1
    if not read:
        raise BadUpload(warnings[0] if warnings else "None of the job's raw files is one ingest reads")
    if warnings:
        log.info("job %s: %d file(s) left out: %s", place.job_id, len(warnings), "; ".join(warnings[:3]))
    steps, annotated = sm.steps_and_annotations(annotations)
    job_section = _job_section(job, job_doc)
    start_ns = job_doc.get("start_ns") if isinstance(job_doc.get("start_ns"), int) else None
    summary = {
        "format": SUMMARY_FORMAT,
        # The SDK rewrites job.json as Completed in finish(); still InProgress: the run died.
        "partial": job_doc.get("status") == "InProgress",
        "job": job_section,
        "files": {kind: len(names) for kind, names in sorted(files.items())},
        "ignored_files": files.get("other", [])[:100],
        "steps": steps,
        "annotations": annotated,
        "metrics": sm.training_metrics(metrics, start_ns),
        "system": sm.system_metrics(samples, start_ns),
        "traces": traces,
        "warnings": warnings[:MAX_WARNINGS],
    }
    series = job_series(samples, annotations, metrics)
    put_series(ctx.store, place, series)
    tensors = tensor_table(tensor_records, warnings)
    if tensors is not None:
        ctx.store.put(place.processed_key(layout.TENSORS), tensors.pack())
        summary["tensors"] = {"names": len(tensors.names()), "rows": len(tensors), "ranks": tensors.ranks()}
    every_rank = with_other_ranks(ctx, place.job_id, tensors, job_doc)  # a distributed run: all ranks
    summary["rules"] = evaluate_job(
        job.get("rules"), series, traces, job_section, finished=True, tensors=every_rank
    )
    return summary


#: What leaves one file out of a job with a warning (``left_out``), not the whole job.
LEFT_OUT = (OverLimit, RecursionError, TraceError, msgspec.MsgspecError, ValueError)


class AnalysisFailed(ValueError):
    """A trace read, then ingest's own code failed on it (a bug, not the file's fault): left out
    like an unreadable file, but said as such and logged with its traceback."""


def left_out(rel: str, exc: BaseException) -> str:
    """The warning for raw file ``rel`` left out for ``exc`` (one of ``LEFT_OUT``)."""
    if isinstance(exc, OverLimit | AnalysisFailed):
        return str(exc)
    if isinstance(exc, RecursionError):
        return f"raw/{rel}: JSON nested too deeply to read"
    return _reason(rel, exc)  # type: ignore[arg-type]


def read_trace(
    ctx: IngestContext,
    key: str,
    rel: str,
    local: Path,
    limit: int,
    folder: str,
    save: Callable[[str, EventStore, dict[str, Any]], None],
    save_views: Callable[[str, dict[str, Any], Path, int], None],
    parsing: Callable[[int], AbstractContextManager[None]],
) -> tuple[dict[str, Any], int, TracePeak]:
    """Inflate trace ``key`` to ``local`` (under ``limit`` bytes for the job), parse it under the
    worker's memory budget, hand its store to ``save(folder, store, entry)`` and then its file to
    ``save_views``; its summary entry and decompressed size. Raises one of ``LEFT_OUT``."""
    size = _inflate(ctx, key, local, rel, limit)
    reserve = trace_reservation(size, ctx.trace_memory)
    read = False  # past the reader, an error is ingest's own (AnalysisFailed), not the file's
    try:
        with ctx.memory.reserve(reserve, f"raw/{rel}"), parsing(size), trace_memory(ctx.trace_memory) as peak:
            # and building its views: numpy holds the GIL too
            store = load_trace(local, size)
            read = True
            scratch.trim_heap()  # each phase's freed heap given back before the next (``scratch``)
            entry = sm.trace_summary(rel, store)
            save(folder, store, entry)
            kineto = store.meta.producer == "kineto"
            del store
            scratch.trim_heap()
            if kineto:
                save_views(folder, entry, local, size)
                scratch.trim_heap()
    except LEFT_OUT as exc:
        if not read or isinstance(exc, OverLimit):
            raise
        log.exception("%s: read, then ingest failed on it", key)
        raise AnalysisFailed(
            f"raw/{rel}: read, but ingest failed on it ({type(exc).__name__}: {str(exc)[:200]}); a bug "
            "in ProfilerHub, not in the file: the worker's log has the traceback"
        ) from exc
    (log.warning if peak.over else log.info)(
        "%s: ingested %.0f MiB decompressed, %s", key, size / 2**20, peak.describe()
    )
    return entry, size, peak


def trace_reservation(size: int, trace_memory: int) -> int:
    """What parsing a trace of ``size`` bytes (decompressed) reserves of the worker's ingest memory:
    ``PARSE_MEMORY_FACTOR`` times its size, and no more than the per-trace budget, which bounds one
    trace's ingest whatever its size (``memory``)."""
    return min(int(size * PARSE_MEMORY_FACTOR), trace_memory)


def _over_job_limit(ctx: IngestContext, rel: str) -> str:
    return (
        f"raw/{rel}: the job's files pass the limit of {ctx.max_ingest_bytes / 2**20:.0f} MiB "
        "decompressed together (PROFILERHUB_JOB_MAX_INGEST_BYTES)"
    )


def _inflate(ctx: IngestContext, key: str, local: Path, rel: str, job_left: int) -> int:
    """Inflate one raw file to ``local`` under the per-file and the per-job limit; its size."""
    ratio, what = ctx.max_inflate_ratio, f"raw/{rel}"
    if job_left < ctx.max_trace_bytes:
        try:
            return inflate_to_file(ctx.store, key, local, max(job_left, 0), what, ratio)
        except OverLimit as exc:
            if not str(exc).startswith(f"{what}: larger than"):
                raise  # the bomb guard or the disk, not the cap
            raise OverLimit(_over_job_limit(ctx, rel)) from None
    try:
        return inflate_to_file(ctx.store, key, local, ctx.max_trace_bytes, what, ratio)
    except OverLimit as exc:
        if not str(exc).startswith(f"{what}: larger than"):
            raise
        raise OverLimit(
            f"raw/{rel}: larger than the per-file limit of {ctx.max_trace_bytes / 2**20:.0f} MiB once "
            "decompressed (PROFILERHUB_JOB_MAX_TRACE_BYTES)"
        ) from None


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
        "run_id",
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


__all__ = [
    "AnalysisFailed",
    "LEFT_OUT",
    "SUMMARY_FORMAT",
    "FanOut",
    "build_summary",
    "left_out",
    "read_trace",
    "trace_reservation",
]
