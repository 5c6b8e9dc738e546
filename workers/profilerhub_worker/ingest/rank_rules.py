"""A distributed run's rank jobs kept in step: the tensor rules of each rank's job read every
rank's series (``ranks.with_other_ranks``), so when one rank's data changes what they find, the
other ranks' jobs are evaluated again at once, not at their own next scan (or never, once Ready).

After a rank job's evaluation (its live scan, or its ingest) ``lagging`` names the other rank jobs
to evaluate again:

    - each whose tensor rules disagree with this evaluation's on what is found: a rule
      IssuesFound on one and not on the other, or with another count of findings (the run's
      finding, seen first in one rank's data, reaches every rank's job, and its stop request
      every rank: a DDP run stopped on one rank alone hangs in its next collective);
    - every Ready one, when this rank is the run's last to end Ready (their final results then
      read every rank's whole series, not what the others had streamed when they ended).

Agreement is not checked further (figures grow with every chunk), so a healthy run costs
nothing more than the scans it already makes. The caller evaluates a running one live
(``live_rules.refresh_peers``) and a Ready one with ``evaluate_ready``: its tensor rules again
over every rank, their results put in place of the old ones (the profiler rules need the traces,
and the traces have not changed). Neither evaluation sends the other ranks on again.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import sqlalchemy as sa

from profilerhub_analysis.rules import overall_status
from profilerhub_analysis.rules.job import evaluate_job
from profilerhub_analysis.rules.model import TENSOR_RULES
from profilerhub_analysis.series import JobSeries
from profilerhub_analysis.tensors import TensorTable
from profilerhub_core.db.models import Job, JobStatus
from profilerhub_core.errors import NotFound
from profilerhub_core.storage import layout
from profilerhub_worker.ingest.actions import act_on_rules, flat_rules
from profilerhub_worker.ingest.context import IngestContext
from profilerhub_worker.ingest.ranks import Peer, peers, run_of, with_other_ranks
from profilerhub_worker.ingest.rules import job_rules, stamped
from profilerhub_worker.ingest.write import plain, put_rules

log = logging.getLogger("profilerhub_worker.rules")


def found(results: dict[str, Any] | None) -> dict[str, int | None]:
    """Each tensor rule of ``results``: its finding count when IssuesFound, else None."""
    out: dict[str, int | None] = {}
    for r in flat_rules(results):
        if r.get("rule") in TENSOR_RULES:
            issues = r.get("status") == "IssuesFound"
            out[r["rule"]] = r.get("finding_count", len(r.get("findings") or [])) if issues else None
    return out


def _disagree(mine: dict[str, int | None], theirs: dict[str, int | None]) -> bool:
    return any(mine[rule] != theirs[rule] for rule in mine.keys() & theirs.keys())


def lagging(
    ctx: IngestContext, job_id: str, doc: dict[str, Any], results: dict[str, Any], *, ended: bool
) -> list[Peer]:
    """The run's other rank jobs to evaluate again after ``results`` (the module's docstring
    says which); ``ended``: this job has just ended Ready. Running ones (InProgress, not yet
    completed) and Ready ones only: a job being ingested reads the others itself."""
    others = peers(ctx, job_id, doc)
    if not others or not found(results):
        return []
    mine = found(results)
    with ctx.sessions() as session:
        rows = {
            row.id: row
            for row in session.execute(
                sa.select(Job.id, Job.status, Job.completed_at, Job.rule_results).where(
                    Job.id.in_([p.job_id for p in others])
                )
            )
        }
    run = run_of(doc)
    world = run[1] if run is not None else 0
    last = ended and len(others) == world - 1 and all(row.status is JobStatus.Ready for row in rows.values())
    out = []
    for peer in others:
        row = rows.get(peer.job_id)
        if row is None:
            continue
        running = row.status is JobStatus.InProgress and row.completed_at is None
        if not (running or row.status is JobStatus.Ready):
            continue
        if (last and row.status is JobStatus.Ready) or _disagree(mine, found(row.rule_results)):
            out.append(Peer(peer.job_id, peer.rank, row.status, peer.created_at, peer.place))
    return out


def _rule_name(config: Any) -> str:
    return config if isinstance(config, str) else str((config or {}).get("rule", ""))


def evaluate_ready(ctx: IngestContext, peer: Peer) -> str:
    """A Ready rank job's tensor rules evaluated again over every rank's series (final), in place
    of their old results on the row and in ``processed/rules.json``; webhooks for what they newly
    find (a Ready job is not stopped). What happened."""
    with ctx.sessions() as session:
        job = session.get(Job, peer.job_id)
        if job is None or job.status is not JobStatus.Ready or not job.rule_results:
            return "skipped"
        configs = [c for c in job_rules(session, job) or [] if _rule_name(c) in TENSOR_RULES]
        before = job.rule_results
    if not configs:
        return "skipped"
    store = ctx.store
    try:
        own: TensorTable | None = TensorTable.unpack(store.get(peer.place.processed_key(layout.TENSORS)))
    except NotFound:
        own = None
    try:
        doc = json.loads(store.get(peer.place.raw_key("job.json")))
    except (NotFound, ValueError):
        return "skipped"
    if not isinstance(doc, dict):
        return "skipped"
    start_ns = doc.get("start_ns") if isinstance(doc.get("start_ns"), int) else None
    every_rank = with_other_ranks(ctx, peer.job_id, own, doc)
    job_section = {"start_ns": start_ns}
    fresh = plain(evaluate_job(configs, JobSeries(), [], job_section, finished=True, tensors=every_rank))
    again = {r["rule"]: r for r in fresh["rules"]}
    rules = [again.get(r.get("rule"), r) for r in before.get("rules") or []]
    after = stamped({**before, "status": overall_status(rules), "rules": rules})
    with ctx.sessions() as session:
        moved = session.execute(
            sa.update(Job)
            .where(Job.id == peer.job_id, Job.status == JobStatus.Ready)
            .values(rule_results=after)
            .execution_options(synchronize_session=False)
        ).rowcount  # type: ignore[attr-defined]
        session.commit()
    if not moved:
        return "skipped"
    put_rules(store, peer.place, after)
    act_on_rules(ctx, peer.job_id, before, after)
    return "evaluated"


__all__ = ["evaluate_ready", "found", "lagging"]
