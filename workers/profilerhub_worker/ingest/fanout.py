"""Fan-out: a job's traces parsed by several workers at once, joined by the task holding the claim.

    ingest (holds the job's claim)          ingest_trace × N (any worker)
    ─ reads the SDK's files                  ─ the claim still this one's? else nothing
    ─ sends INGEST_TRACE for the open   ──►  ─ takes the trace's lease (Redis SET NX), or nothing
      traces but the first                   ─ parses it, writes its views and its part
    ─ then goes through them itself:           (processed/parts/<n>.json), lets the lease go
      a part written: taken, one more opened
      a lease free: takes it, parses it
      else: another worker has it, wait
    ─ all parts in: the summary, rules, Ready (``read.build_summary``, ``run``)

At most ``ctx.traces_per_job`` of a job's traces are open at once: their tasks are sent that many
at a time, the next as one is done, so the queue holds no more of one job than that and another
user's job, sent meanwhile, is taken between them instead of behind all of them (with the share
of jobs per user in ``claim``, the fair share across users on the ingest queue).

Each trace is parsed once, by whichever worker takes its lease first; the task holding the claim
takes any trace nobody holds, so a job finishes even with no other worker free (and never waits on
a task that cannot run: no deadlock on a busy queue). A lease is kept alive by a thread while its
trace is parsed (and, since a parse holds the GIL for seconds, set ahead for as long as the parse
may take at ``ctx.slowest_parse_bytes_per_second``, like the claim's heartbeat); a worker killed
mid-trace lets its lease lapse after ``ctx.heartbeat_stale``, and the claim's task parses that
trace again itself: only that trace. A part is the trace's summary entry (or the warning that left
it out) and its decompressed size; the per-job size limit is applied at the join, in the traces'
order. Trace ``n`` (its place among the job's traces) goes to ``traces/<n>-<name>/`` whatever the
others' fate, so the folders do not depend on which worker finished first.

The task holding the claim keeps its heartbeat (``claim``) meanwhile; if it dies, its claim is
taken over (``reconcile``) and the new claim starts again from nothing: the helpers of the old one
find the claim moved and do nothing.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import orjson

from profilerhub_core.db.models import Job, JobStatus
from profilerhub_core.jobstorage import JobPlace, place_of
from profilerhub_core.storage import layout
from profilerhub_core.tasks import INGEST_TRACE
from profilerhub_worker.ingest import summary as sm
from profilerhub_worker.ingest.context import IngestContext
from profilerhub_worker.ingest.limits import copy_dir, inflate_to_file
from profilerhub_worker.ingest.read import LEFT_OUT, _kind, left_out, read_trace
from profilerhub_worker.ingest.views import put_tb_views, put_trace

log = logging.getLogger("profilerhub_worker.ingest")
LEASE_PREFIX = "profilerhub:ingest-trace:"
#: How often the task holding the claim looks again at traces other workers hold.
POLL_SECONDS = 0.25
_ANNOTATIONS = msgspec.json.Decoder(sm.AnnotationRecord)
Trace = tuple[int, str, str, int]
"""(n, raw key, name under raw/, stored size) of one trace."""


class Lease:
    """One trace's lease in Redis, held by this process; ``parsing(nbytes)`` sets it ahead."""

    def __init__(self, ctx: IngestContext, name: str, token: str) -> None:
        self.ctx, self.name, self.token = ctx, name, token
        self._ahead_ms = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, name=f"lease {name}", daemon=True)

    @property
    def _ttl_ms(self) -> int:
        return max(1, int(self.ctx.heartbeat_stale.total_seconds() * 1000))

    def _keep(self) -> None:
        every = max(self.ctx.heartbeat_every.total_seconds(), 0.05)
        while not self._stop.wait(every):
            try:
                self.ctx.leases.pexpire(self.name, max(self._ttl_ms, self._ahead_ms))
            except Exception:  # Redis away a moment: the next beat tries again
                log.debug("lease %s: refresh failed", self.name, exc_info=True)

    @contextmanager
    def parsing(self, nbytes: int) -> Iterator[None]:
        ahead = int(1000 * nbytes / self.ctx.slowest_parse_bytes_per_second)
        if ahead > self._ttl_ms:
            self._ahead_ms = ahead
            self.ctx.leases.pexpire(self.name, ahead)
        try:
            yield
        finally:
            self._ahead_ms = 0

    def release(self) -> None:
        self._stop.set()
        try:
            if self.ctx.leases.get(self.name) == self.token.encode():
                self.ctx.leases.delete(self.name)
        except Exception:  # it lapses by itself
            log.debug("lease %s: release failed", self.name, exc_info=True)


@contextmanager
def leased(ctx: IngestContext, job_id: str, stamp: str, n: int) -> Iterator[Lease | None]:
    """Trace ``n``'s lease for this claim, held for the block; None when another worker holds it."""
    name = f"{LEASE_PREFIX}{job_id}:{stamp}:{n}"
    token = uuid.uuid4().hex
    ttl = max(1, int(ctx.heartbeat_stale.total_seconds() * 1000))
    if not ctx.leases.set(name, token, nx=True, px=ttl):
        yield None
        return
    lease = Lease(ctx, name, token)
    lease._thread.start()
    try:
        yield lease
    finally:
        lease.release()


def part_key(place: JobPlace, n: int) -> str:
    return place.processed_key(layout.trace_part(n))


def read_part(ctx: IngestContext, place: JobPlace, n: int) -> dict[str, Any] | None:
    """Trace ``n``'s part when a worker has written it."""
    key = part_key(place, n)
    if not ctx.store.exists(key):
        return None
    part: dict[str, Any] = orjson.loads(ctx.store.get(key))
    return part


def parse_part(
    ctx: IngestContext,
    place: JobPlace,
    trace: Trace,
    annotations: list[sm.AnnotationRecord],
    parsing: Callable[[int], AbstractContextManager[None]],
) -> dict[str, Any]:
    """Parse one trace, write its views and its part; the part (with ``memory``: the peak RSS the
    parse measured, ``memory.TracePeak.as_record``)."""
    n, key, rel, _ = trace
    part: dict[str, Any] = {"n": n, "rel": rel, "size": 0}
    with copy_dir() as tmp:
        local = Path(tmp) / rel.rsplit("/", 1)[-1]
        try:
            entry, part["size"], peak = read_trace(
                ctx, key, rel, local, ctx.max_trace_bytes, layout.trace_folder(n, rel),
                lambda folder, store, e: put_trace(ctx.store, place, folder, store, e, annotations),
                lambda folder, e, path, size: put_tb_views(ctx.store, place, folder, e, path, size),
                parsing,
            )  # fmt: skip
            part["entry"] = entry
            part["memory"] = peak.as_record()
        except LEFT_OUT as exc:
            part["warning"] = left_out(rel, exc)
    body = orjson.dumps(part, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    ctx.store.put(part_key(place, n), body)
    loaded: dict[str, Any] = orjson.loads(body)
    return loaded


def _both(
    first: Callable[[int], AbstractContextManager[None]],
    second: Callable[[int], AbstractContextManager[None]],
) -> Callable[[int], AbstractContextManager[None]]:
    @contextmanager
    def parsing(nbytes: int) -> Iterator[None]:
        with ExitStack() as stack:
            stack.enter_context(first(nbytes))
            stack.enter_context(second(nbytes))
            yield

    return parsing


def join_traces(
    ctx: IngestContext,
    place: JobPlace,
    stamp: datetime,
    traces: list[Trace],
    annotations: list[sm.AnnotationRecord],
    parsing: Callable[[int], AbstractContextManager[None]],
) -> list[dict[str, Any]]:
    """Send a task per trace (a window of them at a time), take part in the parsing, and return
    every trace's part, in order
    (what ``read.build_summary``'s ``fan_out`` returns). ``processed/progress.json`` says how many
    are done meanwhile."""
    enqueue = ctx.enqueue
    assert enqueue is not None
    claim = stamp.isoformat()
    window = max(1, ctx.traces_per_job)
    opened = 0  # traces[:opened] are open: sent (all but the first, which this task takes) or done

    def open_more() -> None:
        nonlocal opened
        while opened < len(traces) and opened - len(done) < window:
            n, key, rel, _ = traces[opened]
            if opened:
                enqueue(INGEST_TRACE, place.job_id, claim, n, key, rel)
            opened += 1

    done: dict[int, dict[str, Any]] = {}
    total_bytes = sum(trace[3] for trace in traces)
    sizes = {trace[0]: trace[3] for trace in traces}
    put_progress(ctx, place, 0, len(traces), 0, total_bytes)
    open_more()
    while len(done) < len(traces):
        moved = False
        for trace in traces[:opened]:
            n = trace[0]
            if n in done:
                continue
            part = read_part(ctx, place, n)
            if part is None:
                with leased(ctx, place.job_id, claim, n) as lease:
                    if lease is not None:
                        part = read_part(ctx, place, n) or parse_part(
                            ctx, place, trace, annotations, _both(parsing, lease.parsing)
                        )
            if part is not None:
                done[n] = part
                moved = True
                put_progress(ctx, place, len(done), len(traces), sum(sizes[k] for k in done), total_bytes)
                open_more()
        if not moved:
            time.sleep(POLL_SECONDS)  # others hold the rest: their parts, or their leases lapsing
    return [done[trace[0]] for trace in traces]


def put_progress(
    ctx: IngestContext, place: JobPlace, done: int, total: int, bytes_done: int, total_bytes: int
) -> None:
    """``processed/progress.json``: traces parsed so far of the job's traces, and their bytes as
    stored (``bytes_done`` of ``bytes``: the raw files, compressed or not, as uploaded)."""
    doc = {"traces_done": done, "traces": total, "bytes_done": bytes_done, "bytes": total_bytes}
    ctx.store.put(place.processed_key(layout.PROGRESS), orjson.dumps(doc))


def help_with_trace(ctx: IngestContext, job_id: str, claim: str, n: int, key: str, rel: str) -> str:
    """The ``INGEST_TRACE`` task: parse trace ``n`` of a job while ``claim`` holds it. Returns
    ``parsed``, ``taken`` (another worker has it or had it), or ``stale`` (the claim moved on)."""
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        if job is None or job.status is not JobStatus.Processing or job.updated_at.isoformat() != claim:
            return "stale"
        place = place_of(job)
    if read_part(ctx, place, n) is not None:
        return "taken"
    with leased(ctx, job_id, claim, n) as lease:
        if lease is None or read_part(ctx, place, n) is not None:
            return "taken"
        parse_part(ctx, place, (n, key, rel, 0), read_annotations(ctx, place), lease.parsing)
    return "parsed"


def read_annotations(ctx: IngestContext, place: JobPlace) -> list[sm.AnnotationRecord]:
    """The SDK's annotation records of the job (its timeline's lanes), read again by a helper."""
    records: list[sm.AnnotationRecord] = []
    with copy_dir() as tmp:
        for info in ctx.store.list(place.raw_prefix):
            rel = layout.relative_name(info.key, place.raw_prefix)
            if _kind(rel) != "annotations" or info.size > ctx.max_file_bytes:
                continue
            local = Path(tmp) / "annotations"
            try:
                inflate_to_file(
                    ctx.store, info.key, local, ctx.max_trace_bytes, f"raw/{rel}", ctx.max_inflate_ratio
                )
                records.extend(_ANNOTATIONS.decode_lines(local.read_bytes()))
            except (ValueError, msgspec.MsgspecError):  # the claim's own read warns about it
                continue
            finally:
                local.unlink(missing_ok=True)
    return records


def fan_out_here(ctx: IngestContext) -> bool:
    """Whether this context fans traces out (it has a lease store and a way to send tasks)."""
    return ctx.leases is not None and ctx.enqueue is not None


__all__ = ["LEASE_PREFIX", "help_with_trace", "fan_out_here", "join_traces", "parse_part", "read_part"]
