"""Rules on a running job: evaluated on what it has streamed so far, incrementally.

Every ``scan_interval`` (``PROFILERHUB_RULES_SCAN_INTERVAL_SECONDS``, default 60 s) the periodic
task takes each ``InProgress`` job not yet completed whose results are older than that, and:

    1. lists its raw ``system/``, ``annotations/`` and ``metrics/`` chunks;
    2. reads only the chunks it has not read before (``processed/live/state.json`` names those
       read; the SDK never rewrites a chunk), appending them to the series cached in
       ``processed/live/series.npz``;
    3. evaluates the job's rules with ``finished=False`` (a rule short of data is InProgress),
       its tensor rules over every rank of a distributed run (``ranks.with_other_ranks``),
       and stores the results on the row (only while the job is still InProgress) and in
       ``processed/rules.json``. The quantiles of windows that were full at the last scan are
       kept with the cached series (``rules.base.WindowMemo``) and reused while the new samples
       come after the cached ones, so a scan computes only the windows that filled since; a chunk
       that sorts in earlier drops them and that scan computes every window again. Either way
       the results are those of a scan from scratch;
    4. tells the webhooks of rules newly IssuesFound, and records a stop request when one is
       a rule the run opted to stop on (``actions``);
    5. in a distributed run, evaluates again at once the other ranks' jobs whose tensor rules
       now disagree with this one's (``rank_rules``), so a finding in one rank's data reaches
       every rank's job (and its stop request every rank) in the same scan.

A running job with captures asked also gets ``INGEST_CAPTURES`` sent (``captures``: a capture
uploaded to a presigned URL passes no hub, which sends it for the others).

Ingest empties ``processed/`` and evaluates once more on everything (``final: true``).
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from datetime import timedelta
from typing import Any

import msgspec
import numpy as np
import sqlalchemy as sa

from profilerhub_analysis.rules.base import WindowMemo
from profilerhub_analysis.rules.job import evaluate_job, job_series
from profilerhub_analysis.series import JobSeries, extras, pack, unpack
from profilerhub_analysis.tensor_chunks import ChunkedTable
from profilerhub_analysis.tensors import TensorTable
from profilerhub_core.db.models import Job, JobStatus, utcnow
from profilerhub_core.errors import NotFound
from profilerhub_core.jobstorage import place_of
from profilerhub_core.outage import report
from profilerhub_core.storage import layout
from profilerhub_core.tasks import INGEST_CAPTURES
from profilerhub_worker.ingest import summary as sm
from profilerhub_worker.ingest.actions import act_on_rules
from profilerhub_worker.ingest.context import IngestContext
from profilerhub_worker.ingest.limits import inflate_limit
from profilerhub_worker.ingest.rank_rules import evaluate_ready, lagging
from profilerhub_worker.ingest.ranks import with_other_ranks
from profilerhub_worker.ingest.rules import job_rules, stamped
from profilerhub_worker.ingest.write import put_rules

log = logging.getLogger("profilerhub_worker.rules")
STATE = layout.LIVE_STATE
CACHE = layout.LIVE_SERIES
KINDS = {"system": sm.SystemSample, "annotations": sm.AnnotationRecord, "metrics": sm.MetricRecord}
_DECODERS = {kind: msgspec.json.Decoder(cls) for kind, cls in KINDS.items()}


def _gunzip(data: bytes, ctx: IngestContext) -> bytes:
    """A chunk inflated in memory: no larger than the trace cap, nor (a bomb) than the inflate
    ratio allows for its size."""
    limit = inflate_limit(len(data), ctx.max_trace_bytes, ctx.max_inflate_ratio)
    out = zlib.decompressobj(31).decompress(data, limit + 1)
    if len(out) > limit:
        raise ValueError(f"over {limit} bytes once decompressed")
    return out


def _concat(a: JobSeries, b: JobSeries) -> tuple[JobSeries, bool]:
    """``a`` then ``b`` (system columns missing on one side are NaN there), sorted by time; and
    whether ``b``'s samples all came after ``a``'s (``a``'s samples are then a prefix, unmoved)."""
    t = np.concatenate([a.sys_t_ns, b.sys_t_ns])
    appended = not len(a.sys_t_ns) or not len(b.sys_t_ns) or bool(b.sys_t_ns.min() > a.sys_t_ns[-1])
    order = None if appended else np.argsort(t, kind="stable")  # a stable sort of sorted t moves nothing
    sys = {}
    for name in sorted(set(a.sys) | set(b.sys)):
        col = np.concatenate([a.sys.get(name, np.full(len(a.sys_t_ns), np.nan)),
                              b.sys.get(name, np.full(len(b.sys_t_ns), np.nan))])  # fmt: skip
        sys[name] = col if order is None else col[order]
    metrics = dict(a.metrics)
    for name, cols in b.metrics.items():
        if name in metrics:
            joined = [np.concatenate([x, y]) for x, y in zip(metrics[name], cols, strict=True)]
            o = np.argsort(joined[0], kind="stable")
            metrics[name] = (joined[0][o], joined[1][o], joined[2][o])
        else:
            metrics[name] = cols

    def ranges(x: Any, y: Any) -> Any:
        if x is None or y is None:
            return x if y is None else y
        joined = [np.concatenate([p, q]) for p, q in zip(x, y, strict=True)]
        o = np.argsort(joined[0], kind="stable")
        return tuple(c[o] for c in joined)

    series = JobSeries(
        t if order is None else t[order],
        sys,
        metrics,
        ranges(a.steps, b.steps),
        ranges(a.dataloader, b.dataloader),
    )
    return series, appended


def _live_tensors(
    ctx: IngestContext, place: Any, state: dict[str, Any], chunks: dict[str, str]
) -> tuple[TensorTable | None, bool]:
    """The running job's ``TensorTable``: the cached one (``processed/live/tensors.npz``) with the
    chunks not read before merged in (cached again when there were any); None without tensors."""
    done = set(state.get("tensors_read", []))
    try:
        cached = TensorTable.unpack(ctx.store.get(place.processed_key(layout.LIVE_TENSORS))) if done else None
    except (NotFound, ValueError, KeyError):
        cached, done = None, set()
    grown = ChunkedTable(cached, done)
    table = grown.update(chunks, lambda rel: _gunzip_checked(ctx, chunks[rel]))
    fresh = grown.read - done
    if fresh and len(table):
        ctx.store.put(place.processed_key(layout.LIVE_TENSORS), table.pack())
        state["tensors_read"] = sorted(grown.read)
    return (table if len(table) else None), bool(fresh)


def _gunzip_checked(ctx: IngestContext, key: str) -> bytes:
    """A chunk's bytes, refused (``ValueError``) when it inflates past the trace limit."""
    data = ctx.store.get(key)
    _gunzip(data, ctx)
    return data


def evaluate_live(ctx: IngestContext, job_id: str, *, peers: bool = True) -> str:
    """Evaluate one running job's rules on what it has streamed; what happened. ``peers``: then
    the run's other rank jobs whose tensor rules now lag this one's (``refresh_peers``)."""
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        if job is None or job.status is not JobStatus.InProgress or job.completed_at is not None:
            return "skipped"
        place, configs, before = place_of(job), job_rules(session, job), job.rule_results
    try:
        state = json.loads(ctx.store.get(place.processed_key(STATE)))
        packed = ctx.store.get(place.processed_key(CACHE))
        cached, memo = unpack(packed), extras(packed)
    except NotFound:
        state, cached, memo = {"read": [], "start_ns": None}, JobSeries(), {}
    read = set(state["read"])
    records: dict[str, list[Any]] = {kind: [] for kind in KINDS}
    fresh = []
    tensor_chunks: dict[str, str] = {}  # rel -> key, of ph.watch's chunks (size-checked)
    for info in ctx.store.list(place.raw_prefix):
        rel = layout.relative_name(info.key, place.raw_prefix)
        kind = rel.split("/", 1)[0]
        if kind == layout.RAW_TENSORS and info.size <= ctx.max_file_bytes:
            tensor_chunks[rel] = info.key
            continue
        if rel == "job.json" and (state.get("start_ns") is None or "run" not in state):
            try:
                doc = json.loads(ctx.store.get(info.key))
                state["start_ns"] = doc.get("start_ns") if isinstance(doc.get("start_ns"), int) else None
                state["run"] = {k: doc.get(k) for k in ("rank", "world_size", "run_id")}
            except (ValueError, NotFound, AttributeError):
                pass
        if (
            kind not in KINDS
            or not rel.endswith(".jsonl.gz")
            or rel in read
            or info.size > ctx.max_file_bytes
        ):
            continue
        try:
            records[kind].extend(_DECODERS[kind].decode_lines(_gunzip(ctx.store.get(info.key), ctx)))
        except (ValueError, zlib.error, msgspec.MsgspecError, NotFound) as exc:
            log.info("job %s: live rules skip raw/%s (%s)", job_id, rel, exc)
        fresh.append(rel)
    series, appended = _concat(
        cached, job_series(records["system"], records["annotations"], records["metrics"])
    )
    windows = WindowMemo(memo if appended else None)
    job_section = {"start_ns": state.get("start_ns")}
    tensors, tensors_fresh = _live_tensors(ctx, place, state, tensor_chunks)
    tensors = with_other_ranks(ctx, job_id, tensors, state.get("run") or {})  # every rank's series
    results = stamped(
        evaluate_job(
            configs,
            series,
            [],
            job_section,
            finished=False,
            windows=windows,
            tensors=tensors,
            now_ns=time.time_ns(),
        )
    )
    state["read"] = sorted(read | set(fresh))
    if fresh or tensors_fresh:
        ctx.store.put(place.processed_key(CACHE), pack(series, extra=windows.arrays(), flat=True))
        ctx.store.put(place.processed_key(STATE), json.dumps(state).encode())
    with ctx.sessions() as session:
        stmt = (
            sa.update(Job)
            .where(Job.id == job_id, Job.status == JobStatus.InProgress, Job.completed_at.is_(None))
            .values(rule_results=results)
            .execution_options(synchronize_session=False)
        )
        moved = session.execute(stmt).rowcount  # type: ignore[attr-defined]
        session.commit()
    if not moved:
        return "skipped"  # completed meanwhile: ingest evaluates on everything
    put_rules(ctx.store, place, results)
    try:
        act_on_rules(ctx, job_id, before, results)
    except Exception as exc:  # the next job's scan goes on
        if not report(exc):  # an outage is counted, not logged per job (``profilerhub_core.outage``)
            log.exception("job %s: webhook deliveries could not be recorded", job_id)
    if peers:
        refresh_peers(ctx, job_id, state.get("run") or {}, results)
    return "evaluated"


def refresh_peers(
    ctx: IngestContext, job_id: str, doc: dict[str, Any], results: dict[str, Any], *, ended: bool = False
) -> int:
    """Evaluate again the run's other rank jobs that lag ``results`` (``rank_rules.lagging``):
    running ones live, Ready ones final; how many. Never raises for another job's trouble."""
    count = 0
    try:
        for peer in lagging(ctx, job_id, doc, results, ended=ended):
            ready = peer.status is JobStatus.Ready
            done = evaluate_ready(ctx, peer) if ready else evaluate_live(ctx, peer.job_id, peers=False)
            count += done == "evaluated"
    except Exception as exc:
        if not report(exc):
            log.exception("job %s: the run's other ranks could not be evaluated again", job_id)
    return count


def evaluate_running_jobs(
    ctx: IngestContext, scan_interval: float = 60.0, limit: int = 500
) -> dict[str, int]:
    """The periodic task: every running job whose results are older than ``scan_interval``."""
    cutoff = utcnow() - timedelta(seconds=scan_interval)
    with ctx.sessions() as session:
        rows = session.execute(
            sa.select(Job.id, Job.rule_results, Job.captures)
            .where(Job.status == JobStatus.InProgress, Job.completed_at.is_(None))
            .order_by(Job.updated_at.desc()).limit(limit)
        ).all()  # fmt: skip
    counts = {"evaluated": 0, "skipped": 0}
    for job_id, results, captures in rows:
        if captures and ctx.enqueue is not None:  # a presigned upload passes no hub: send it here
            ctx.enqueue(INGEST_CAPTURES, job_id)
        at = (results or {}).get("evaluated_at")
        if at and at > cutoff.isoformat():
            counts["skipped"] += 1
            continue
        counts[evaluate_live(ctx, job_id)] += 1
    return counts


__all__ = ["evaluate_live", "evaluate_running_jobs", "refresh_peers"]
