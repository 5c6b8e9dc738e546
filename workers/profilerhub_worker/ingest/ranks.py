"""A distributed run's other ranks, so that a rank job's tensor rules read every rank's series.

Each rank of a distributed run registers its own job under the run's name (``docs/debugging.md``).
The job's rules, live (``live_rules``) and at ingest (``read``), read ``with_other_ranks``: the
job's own ``TensorTable`` with the other ranks' merged in (the ``rank`` column keeps them apart),
so every rank's series is checked and a finding names the rank it came from
(``rules.model._common.label``), and a ``stop_on`` rule that trips on one rank stops them all
(each rank's job sees the finding).

Which jobs are the other ranks: the owner's jobs of the same name created within ``WINDOW`` of
this one, not Failed, whose ``job.json`` gives the same ``world_size`` (above 1), another
``rank``, and the same ``run_id`` (the SDK's digest of the launcher's environment) where both
have one; the nearest in creation time first, one job per rank, until the world is complete. So
two runs of a name are not mixed unless they ran within ``WINDOW`` of each other with the same
launcher environment (then each rank's nearest job is taken).

A rank job's table as it stands: Ready, ``processed/tensors.npz``; running, what its own live
scan cached (``processed/live/tensors.npz``), else (no scan yet, or being ingested) its raw
chunks, each read once per worker process (``tensors_api.JobTensors``). A rank ingested before
the others have finished sees their series so far; the live scans and the last rank's ingest
see more.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from profilerhub_analysis.tensors import TensorTable
from profilerhub_analysis.tensors_api import JobTensors
from profilerhub_core.db.models import Job, JobStatus
from profilerhub_core.errors import NotFound
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.storage import layout
from profilerhub_worker.ingest.context import IngestContext

log = logging.getLogger("profilerhub_worker.rules")

WINDOW = timedelta(hours=1)
"""How far apart in creation time the jobs of one run's ranks may be."""
MAX_CANDIDATES = 1024
"""At most this many jobs of the name (nearest first) are looked at."""
ALIVE = (JobStatus.InProgress, JobStatus.Processing, JobStatus.Ready)


@functools.cache
def _tables() -> JobTensors:
    """Running rank jobs' tables grown from their chunks, one cache per worker process."""
    return JobTensors()


def run_of(doc: Mapping[str, Any]) -> tuple[int, int, str | None] | None:
    """``(rank, world_size, run_id)`` of a ``job.json``; None unless it is one rank of several."""
    rank, world, run = doc.get("rank"), doc.get("world_size"), doc.get("run_id")
    if not isinstance(rank, int) or not isinstance(world, int) or world < 2 or not 0 <= rank < world:
        return None
    return rank, world, run if isinstance(run, str) else None


def with_other_ranks(
    ctx: IngestContext, job_id: str, own: TensorTable | None, doc: Mapping[str, Any]
) -> TensorTable | None:
    """``own`` (the job's table; None: it has none) with the run's other ranks' tables merged
    in; ``own`` itself outside a distributed run. Never raises for another job's trouble: a rank
    that cannot be read is left out (logged)."""
    me = run_of(doc)
    if me is None:
        return own
    rank, world, run = me
    try:
        return _merged(ctx, job_id, own, rank, world, run)
    except Exception:  # the job's own rules go on without the others
        log.exception("job %s: the other ranks' tensors could not be read", job_id)
        return own


@dataclass(frozen=True)
class Peer:
    """Another rank's job of the run."""

    job_id: str
    rank: int
    status: JobStatus
    created_at: datetime
    place: JobPlace


def _candidates(ctx: IngestContext, job_id: str, world: int, run: str | None) -> Iterator[Peer]:
    """The jobs that may be the run's other ranks (see the module's docstring), nearest in
    creation time first; a rank may come more than once (an earlier run of the name)."""
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        if job is None:
            return
        created, user_id, name = job.created_at, job.user_id, job.name
        rows = session.execute(
            sa.select(Job.id, Job.domain_id, Job.user_id, Job.status, Job.created_at)
            .where(Job.user_id == user_id, Job.name == name, Job.id != job_id,
                   Job.status.in_(ALIVE), Job.created_at.between(created - WINDOW, created + WINDOW))
            .limit(MAX_CANDIDATES)
        ).all()  # fmt: skip
    for row in sorted(rows, key=lambda r: abs((r.created_at - created).total_seconds())):
        place = JobPlace(row.domain_id, row.user_id, row.id)
        theirs = job_doc(ctx, place)
        other = run_of(theirs) if theirs is not None else None
        if other is None or other[1] != world:
            continue
        if run is not None and other[2] is not None and other[2] != run:
            continue
        yield Peer(row.id, other[0], row.status, row.created_at, place)


def peers(ctx: IngestContext, job_id: str, doc: Mapping[str, Any]) -> list[Peer]:
    """The run's other rank jobs, the nearest one per rank; none outside a distributed run."""
    me = run_of(doc)
    if me is None:
        return []
    rank, world, run = me
    found: dict[int, Peer] = {}
    for peer in _candidates(ctx, job_id, world, run):
        if peer.rank != rank and peer.rank not in found:
            found[peer.rank] = peer
            if len(found) == world - 1:
                break
    return sorted(found.values(), key=lambda p: p.rank)


def _merged(
    ctx: IngestContext, job_id: str, own: TensorTable | None, rank: int, world: int, run: str | None
) -> TensorTable | None:
    table, ranks = own, {rank} | set(own.ranks() if own is not None else [])
    for peer in _candidates(ctx, job_id, world, run):
        if len(ranks) >= world:
            break
        if peer.rank in ranks:
            continue
        more = _table(ctx, peer.place, peer.status is JobStatus.Ready)
        if not len(more) or set(more.ranks()) & ranks:
            continue
        table = more if table is None else table.merge(more)
        ranks |= {peer.rank, *more.ranks()}
    return table


def job_doc(ctx: IngestContext, place: JobPlace) -> dict[str, Any] | None:
    try:
        doc = json.loads(ctx.store.get(place.raw_key("job.json")))
    except (NotFound, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _table(ctx: IngestContext, place: JobPlace, ready: bool) -> TensorTable:
    """Another rank's table as it stands (the module's docstring says from where)."""
    store = ctx.store
    if ready:
        _tables().forget(place.job_id)
        try:
            return TensorTable.unpack(store.get(place.processed_key(layout.TENSORS)))
        except NotFound:
            return TensorTable.empty()
    try:
        return TensorTable.unpack(store.get(place.processed_key(layout.LIVE_TENSORS)))
    except NotFound:
        pass
    prefix = place.raw_prefix + layout.RAW_TENSORS + "/"
    names = [layout.relative_name(o.key, place.raw_prefix) for o in store.list(prefix)
             if o.size <= ctx.max_file_bytes]  # fmt: skip
    return _tables().live(place.job_id, names, lambda rel: store.get(place.raw_key(rel))).table


__all__ = ["WINDOW", "Peer", "job_doc", "peers", "run_of", "with_other_ranks"]
