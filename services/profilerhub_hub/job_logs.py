"""A job's log: the lines its training script printed, as the SDK delivered them.

The SDK keeps every complete line written to ``sys.stdout``/``sys.stderr`` (up to a per-run byte
cap, ``PROFILERHUB_LOG_MAX_BYTES``, default 8 MiB; the rest only counted in ``job.json``'s
``logs``) and uploads them with its other chunks, one folder per rank:

    raw/logs/rank{R}/{seq:06d}.jsonl.gz      {"ts_ns", "source": "stdout"|"stderr", "message"}

    page(store, job, rank, offset, limit)  one page of a rank's lines, for the REST route
    ranks(store, job)              {rank: chunk keys in order}: one listing
    events(store, job, rank)       the rank's lines, in the order printed
    stream_name(job, rank)         ``{job name}/algo-{rank+1}-{epoch of the job's creation}``,
                                   SageMaker's stream naming; ``parse_stream`` reads one back

Read by the REST ``GET …/jobs/{id}/logs`` and the ``/logs`` door, while the job runs (what has
arrived) and after. Ingest leaves these files alone.

A log panel following a running job asks ``page`` every few seconds from the last line it has.
The SDK never rewrites a chunk, so how many lines each chunk holds is kept (``_LINE_COUNTS``, by
key and size: a chunk replaced by a whole one after a cut-short upload is counted again), and a
page decodes only the chunks from the one holding ``offset``: following a log at its 8 MiB cap
costs a chunk or two per poll, not every chunk (``benchmarks/bench_job_logs.py`` prints both).
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass

import msgspec

from profilerhub_core.db.models import Job
from profilerhub_core.errors import NotFound
from profilerhub_core.jobstorage import place_of
from profilerhub_core.storage import ObjectStore, layout
from profilerhub_hub.job_schemas import JobLog, LogLine

FOLDER = "logs/"
_CHUNK = re.compile(r"logs/rank(?P<rank>[0-9]{1,6})/[0-9]+\.jsonl\.gz")
_STREAM = re.compile(r"(?P<job>[^/]+)/algo-(?P<instance>[0-9]{1,6})-(?P<epoch>[0-9]{1,12})")
MAX_CHUNK_BYTES = 64 << 20  # once decompressed: a chunk is a few seconds of a run's output


class LogRecord(msgspec.Struct, gc=False):
    """One printed line."""

    ts_ns: int
    message: str
    source: str = "stdout"


_DECODER = msgspec.json.Decoder(LogRecord)


@dataclass(frozen=True, slots=True)
class StreamRef:
    """What a stream name says: a job (name or id), a rank, the job's creation epoch."""

    job: str
    rank: int
    epoch: int


def stream_name(job: Job, rank: int) -> str:
    return f"{job.name}/algo-{rank + 1}-{int(job.created_at.timestamp())}"


def parse_stream(name: str) -> StreamRef | None:
    match = _STREAM.fullmatch(name)
    if match is None or int(match["instance"]) < 1:
        return None
    return StreamRef(match["job"], int(match["instance"]) - 1, int(match["epoch"]))


#: Chunks whose line count is kept (a few bytes each).
MAX_COUNTED_CHUNKS = 200_000
_LINE_COUNTS: OrderedDict[tuple[str, int], int] = OrderedDict()
_COUNTS_LOCK = threading.Lock()


def _line_count(store: ObjectStore, key: str, size: int, decoded: list[LogRecord] | None = None) -> int:
    with _COUNTS_LOCK:
        known = _LINE_COUNTS.get((key, size))
    if known is not None:
        return known
    count = len(decoded if decoded is not None else events(store, [key]))
    with _COUNTS_LOCK:
        _LINE_COUNTS[(key, size)] = count
        while len(_LINE_COUNTS) > MAX_COUNTED_CHUNKS:
            _LINE_COUNTS.popitem(last=False)
    return count


def page(store: ObjectStore, job: Job, rank: int | None, offset: int, limit: int) -> JobLog:
    """``limit`` lines of ``rank`` (default the first) from ``offset`` on, for the REST route
    (decoding only the chunks from the one holding ``offset``: see the module docstring)."""
    chunks = _listing(store, job)
    if rank is not None and rank not in chunks:
        raise NotFound(f"Job '{job.id}' has no log of rank {rank}")
    rank = rank if rank is not None else next(iter(chunks), None)
    listed = chunks[rank] if rank is not None else []
    counts = [_line_count(store, key, size) for key, size in listed]
    total, before, first = sum(counts), 0, 0
    while first < len(listed) and before + counts[first] <= offset:
        before += counts[first]
        first += 1
    lines: list[LogRecord] = []
    for key, size in listed[first:]:
        if len(lines) >= offset - before + limit:
            break
        decoded = events(store, [key])
        _line_count(store, key, size, decoded)
        lines.extend(decoded)
    shown = lines[max(offset - before, 0) : max(offset - before, 0) + limit]
    return JobLog(
        job_id=job.id,
        ranks=list(chunks),
        rank=rank,
        stream=stream_name(job, rank) if rank is not None else None,
        lines=[LogLine(ts_ns=r.ts_ns, source=r.source, message=r.message) for r in shown],
        total=total,
        next_offset=min(offset, total) + len(shown),
        dropped=_counts(store, job),
    )


def _counts(store: ObjectStore, job: Job) -> dict[str, int] | None:
    try:
        doc = json.loads(store.get(place_of(job).raw_key("job.json")))
    except (NotFound, ValueError):
        return None
    counts = doc.get("logs") if isinstance(doc, dict) else None
    return {k: int(v) for k, v in counts.items() if isinstance(v, int)} if isinstance(counts, dict) else None


def ranks(store: ObjectStore, job: Job) -> dict[int, list[str]]:
    """The job's log chunks by rank, each rank's in upload order (their sequence numbers)."""
    return {rank: [key for key, _ in listed] for rank, listed in _listing(store, job).items()}


def _listing(store: ObjectStore, job: Job) -> dict[int, list[tuple[str, int]]]:
    """``ranks`` with each chunk's size: one listing."""
    place = place_of(job)
    out: dict[int, list[tuple[str, int]]] = {}
    for info in store.list(place.raw_prefix + FOLDER):
        match = _CHUNK.fullmatch(layout.relative_name(info.key, place.raw_prefix))
        if match is not None:
            out.setdefault(int(match["rank"]), []).append((info.key, info.size))
    return {rank: sorted(keys) for rank, keys in sorted(out.items())}


def events(store: ObjectStore, keys: list[str]) -> list[LogRecord]:
    """The lines of the chunks ``keys`` (one rank's, from ``ranks``), in order; a chunk that is
    not readable (cut short, not the SDK's) is left out."""
    out: list[LogRecord] = []
    for key in keys:
        try:
            data = zlib.decompressobj(31).decompress(store.get(key), MAX_CHUNK_BYTES)
            out.extend(_DECODER.decode_lines(data))
        except (zlib.error, msgspec.MsgspecError, NotFound):
            continue
    return out


__all__ = ["FOLDER", "LogRecord", "StreamRef", "events", "page", "parse_stream", "ranks", "stream_name"]
