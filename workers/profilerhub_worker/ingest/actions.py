"""What a rule evaluation sets off: webhooks told of rules that turned IssuesFound (and of a job
Ready or Failed), and a stop request when such a rule is one the job's run opted to stop on.

    act_on_rules(ctx, job_id, before, after)    after a live or final evaluation
    act_on_end(ctx, job_id, status)             after ingest ended the job

A rule is *newly* IssuesFound when it was not IssuesFound in the evaluation before (``before``:
the results the row held), so a finding is announced once, not at every scan. ProfilerReport's
member rules count one by one. The delivery rows (and the stop request, with its audit event) are
committed first; the delivery tasks are sent after the commit, each with its delivery id.

A distributed run's rank jobs each read every rank's series (``ranks``), so each finds the run's
findings and turns IssuesFound in turn; the run's webhook hears of it once: a ``rule.IssuesFound``
delivery's key (``WebhookDelivery.dedupe_key``, unique per webhook) is the rule and the run, named
by its first rank job (the earliest created), and the payload says which ranks the findings are
on (``rule.ranks``) and the run's rank jobs (``run``). Each rank job's stop request is its own.
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa

from profilerhub_core.db.models import Domain, Job, JobStatus, UserProfile, utcnow
from profilerhub_core.jobstorage import place_of
from profilerhub_core.outage import report
from profilerhub_core.records import audit, webhooks
from profilerhub_core.tasks import DELIVER_WEBHOOK
from profilerhub_worker.ingest.context import IngestContext
from profilerhub_worker.ingest.ranks import job_doc, peers, run_of

log = logging.getLogger("profilerhub_worker.actions")
FINDINGS_IN_PAYLOAD = 5


def flat_rules(results: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every rule result, ProfilerReport's members in its place."""
    out: list[dict[str, Any]] = []
    for result in (results or {}).get("rules") or []:
        out.extend(result.get("rules") or [result])
    return out


def newly_found(before: dict[str, Any] | None, after: dict[str, Any]) -> list[dict[str, Any]]:
    was = {r["rule"] for r in flat_rules(before) if r.get("status") == "IssuesFound"}
    return [r for r in flat_rules(after) if r.get("status") == "IssuesFound" and r["rule"] not in was]


def _job_section(session: Any, job: Job) -> dict[str, Any]:
    domain, user = session.get(Domain, job.domain_id), session.get(UserProfile, job.user_id)
    d, u = (domain.name if domain else ""), (user.name if user else "")
    return {
        "job_id": job.id,
        "name": job.name,
        "domain": d,
        "user": u,
        "status": job.status.value,
        "path": f"/api/v1/domains/{d}/users/{u}/jobs/{job.id}",
    }


def rule_payload(
    job: dict[str, Any], rule: dict[str, Any], final: bool, run: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The ``rule.IssuesFound`` body; ``run``: a distributed run's ``{"world_size", "jobs"}``."""
    findings = rule.get("findings") or []
    ranks = sorted(
        {f["figures"]["rank"] for f in findings if isinstance((f.get("figures") or {}).get("rank"), int)}
    )
    if not ranks:  # one rank's series: the job's own
        ranks = [next((j["rank"] for j in (run or {}).get("jobs", []) if j["job_id"] == job["job_id"]), 0)]
    payload = {
        "event": webhooks.RULE_ISSUES_FOUND,
        "job": job,
        "final": final,
        "rule": {
            "rule": rule["rule"],
            "status": rule["status"],
            "reason": rule.get("reason", ""),
            "ranks": ranks,
            "finding_count": rule.get("finding_count", len(findings)),
            "findings": findings[:FINDINGS_IN_PAYLOAD],
            "figures": rule.get("figures") or {},
            "recommendation": rule.get("recommendation", ""),
        },
    }
    if run is not None:
        payload["run"] = run
    return payload


def _send(ctx: IngestContext, ids: list[str]) -> None:
    if ctx.enqueue is None:
        log.warning("no task sender: %d webhook deliveries stay Pending", len(ids))
        return
    for delivery_id in ids:
        ctx.enqueue(DELIVER_WEBHOOK, delivery_id)


def run_of_job(ctx: IngestContext, job: Job) -> tuple[str, dict[str, Any] | None]:
    """The job's run: the id that names it (its first rank job's: the earliest created, the
    job's own outside a distributed run) and ``{"world_size", "jobs": [{"rank", "job_id"}]}``
    (None outside one)."""
    doc = job_doc(ctx, place_of(job)) or {}
    me = run_of(doc)
    if me is None:
        return job.id, None
    others = peers(ctx, job.id, doc)
    first = min([(job.created_at, job.id), *((p.created_at, p.job_id) for p in others)])
    members = sorted([(me[0], job.id), *((p.rank, p.job_id) for p in others)])
    return first[1], {"world_size": me[1], "jobs": [{"rank": r, "job_id": i} for r, i in members]}


def act_on_rules(
    ctx: IngestContext, job_id: str, before: dict[str, Any] | None, after: dict[str, Any]
) -> int:
    """Deliveries and a stop request for the rules newly IssuesFound; how many deliveries."""
    found = newly_found(before, after)
    if not found:
        return 0
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        if job is None:
            return 0
        session.expunge(job)
    try:
        anchor, run = run_of_job(ctx, job)
    except Exception as exc:  # storage out: announced as the job's own (a rank's twin may follow)
        if not report(exc):
            log.exception("job %s: its run's rank jobs could not be read", job_id)
        anchor, run = job_id, None
    ids: list[str] = []
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        if job is None:
            return 0
        section = _job_section(session, job)
        for rule in found:
            ids += webhooks.add_deliveries(
                session,
                job,
                webhooks.RULE_ISSUES_FOUND,
                rule_payload(section, rule, bool(after.get("final")), run),
                key=f"{webhooks.RULE_ISSUES_FOUND}:{rule['rule']}:{anchor}",
            )
        _request_stop(session, job, section, found)
        session.commit()
    _send(ctx, ids)
    return len(ids)


def _request_stop(session: Any, job: Job, section: dict[str, Any], found: list[dict[str, Any]]) -> None:
    """Record a stop request (once, while the job still runs) for the first ``stop_on`` rule found."""
    wanted = set(job.stop_on or [])
    hit = next((r for r in found if r["rule"] in wanted), None)
    if hit is None or job.stop_request is not None or job.status is not JobStatus.InProgress:
        return
    request = {"rule": hit["rule"], "reason": hit.get("reason", ""), "requested_at": utcnow().isoformat()}
    moved = session.execute(
        sa.update(Job)
        .where(Job.id == job.id, Job.stop_request.is_(None), Job.status == JobStatus.InProgress)
        .values(stop_request=request)
        .execution_options(synchronize_session=False)
    ).rowcount
    if moved:
        audit.record_audit(
            session,
            actor="worker",
            action="RequestStopTraining",
            target_type="Job",
            target=job.id,
            domain=section["domain"],
            detail={"user": section["user"], **request},
        )


def act_on_end(ctx: IngestContext, job_id: str) -> int:
    """Deliveries of ``job.Ready`` / ``job.Failed`` for a job ingest has just ended."""
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        if job is None or job.status not in (JobStatus.Ready, JobStatus.Failed):
            return 0
        event = webhooks.JOB_READY if job.status is JobStatus.Ready else webhooks.JOB_FAILED
        payload = {
            "event": event,
            "job": _job_section(session, job),
            "failure_reason": job.failure_reason,
            "rules_status": (job.rule_results or {}).get("status"),
        }
        ids = webhooks.add_deliveries(session, job, event, payload)
        session.commit()
    _send(ctx, ids)
    return len(ids)


__all__ = ["act_on_end", "act_on_rules", "flat_rules", "newly_found", "rule_payload", "run_of_job"]
