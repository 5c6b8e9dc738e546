"""Jobs seen and steered from outside their training run: the use cases the REST jobs routes,
the SageMaker door (training jobs) and the CloudWatch door share.

    visible_jobs(caller)                 the jobs a caller may list: their own; a domain
                                         admin's domain's; a platform admin's every job
    find_job(session, caller, name_or_id) one job by id, else the newest visible of that name
    job_target(caller, job, domain, user) the job's owner as the target of an action
    job_series(store, job)               the job's series: ``processed/series.npz`` once Ready,
                                         what the live scan cached while it runs
    request_stop(session, target, job)   a person asks the run to stop (``Job.stop_request``)
    capture_request(store, job, …)       a PyTorch-profiler capture of N steps, once it can be done

A stop a person asks for is ``{"by": "user", "actor", "requested_at"}`` on ``Job.stop_request``
(a rule's, written by the live rules, is ``{"rule", "reason", "requested_at"}``). Every upload
answer of the run then carries ``X-ProfilerHub-Stop: StopTrainingJob``, and the SDK raises
``ph.StopTraining`` at its next ``ph.step`` whether or not the run opted into ``stop_on``.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import Domain, Job, JobStatus, UserProfile, utcnow
from profilerhub_core.errors import Conflict, InvalidInput, NotFound
from profilerhub_core.jobstorage import place_of
from profilerhub_core.records import jobs
from profilerhub_core.records.users import user_not_found
from profilerhub_core.storage import ObjectStore, layout
from profilerhub_hub.deps.targets import Resolved
from profilerhub_hub.permissions import Caller, Target

if TYPE_CHECKING:
    from profilerhub_analysis.series import JobSeries

USER_STOP = jobs.USER_STOP


def visible_jobs(caller: Caller) -> sa.Select[Any]:
    """The jobs ``caller`` may see (unordered), as the REST routes scope them: a user's own, a
    domain administrator's whole domain, a platform administrator's every domain."""
    stmt = sa.select(Job)
    if caller.is_platform_admin:
        return stmt
    if caller.is_domain_admin:
        return stmt.where(Job.domain_id == caller.domain_id)
    return stmt.where(Job.user_id == caller.user_id)


def find_job(session: Session, caller: Caller, name_or_id: str) -> Job:
    """The job ``name_or_id`` names for ``caller``: the job of that id, else the newest of that
    name among the jobs they may see. ``NotFound`` alike for a missing and a hidden job."""
    visible = visible_jobs(caller)
    job = session.scalar(visible.where(Job.id == name_or_id))
    if job is None:
        job = session.scalar(
            visible.where(Job.name == name_or_id).order_by(Job.created_at.desc(), Job.id.desc()).limit(1)
        )
    if job is None:
        raise jobs.job_not_found(name_or_id)
    return job


def owner_of(session: Session, job: Job) -> tuple[Domain, UserProfile]:
    user = session.get(UserProfile, job.user_id)
    domain = session.get(Domain, job.domain_id)
    if user is None or domain is None:  # deleted meanwhile
        raise jobs.job_not_found(job.id)
    return domain, user


def job_target(caller: Caller, domain: Domain, user: UserProfile) -> Resolved:
    """The owner of a job found by ``find_job`` as the target of an action on it."""
    target = Target(domain_id=domain.id, owner_id=user.id, not_found=user_not_found(domain.name, user.name))
    return Resolved(caller, target, domain, user)


def run_rank(store: ObjectStore, job: Job) -> int:
    """The rank of the job's run (``raw/job.json``'s ``rank``: the SDK's ``RANK``); 0 without one."""
    try:
        doc = json.loads(store.get(place_of(job).raw_key("job.json")))
    except (NotFound, ValueError):
        return 0
    rank = doc.get("rank") if isinstance(doc, dict) else None
    return rank if isinstance(rank, int) and rank >= 0 else 0


is_running = jobs.is_running
"""The run is still uploading: InProgress and not completed (``records.jobs.is_running``)."""


def job_series(store: ObjectStore, job: Job) -> JobSeries:
    """What the job's series hold now: a Ready job's ``processed/series.npz``; a running job's
    samples as the live rules last cached them (``processed/live/series.npz``, refreshed every
    ``rules_scan_interval_seconds``); nothing for a job being ingested or failed."""
    from profilerhub_analysis.series import JobSeries, unpack  # numpy: not at the hub's start

    place = place_of(job)
    if job.status is JobStatus.Ready:
        name = layout.SERIES
    elif is_running(job):
        name = layout.LIVE_SERIES
    else:
        return JobSeries()
    try:
        return unpack(store.get(place.processed_key(name)))
    except NotFound:  # nothing cached yet, or ingested before series were written
        return JobSeries()


def request_stop(session: Session, target: Resolved, job: Job) -> bool:
    """Ask ``job``'s run to stop (flushed; the caller commits with its audit row). True when
    this asked; False when a person had already asked. ``Conflict`` once the run is over."""
    if not is_running(job):
        state = "completed" if job.status is JobStatus.InProgress else job.status.value
        raise Conflict(f"Job '{job.id}' is {state}; only a running job can be stopped")
    if jobs.stopped_by_user(job):
        return False
    request: dict[str, Any] = {
        "by": "user",
        "actor": target.caller.actor,
        "requested_at": utcnow().isoformat(),
    }
    previous = job.stop_request
    if previous:  # a rule's request stays in the record
        request["rule_request"] = previous
    jobs.set_fields(session, job, stop_request=request)
    return True


MAX_CAPTURE_STEPS = 100


def capture_request(
    store: ObjectStore, job: Job, steps: int, start_step: int | None, record_shapes: bool, actor: str
) -> dict[str, Any]:
    """A capture of ``steps`` steps for the running ``job``, after the checks that it can be done:
    the run is going, went through the SDK (its ``raw/job.json``), has torch, and does not run the
    PyTorch profiler on a schedule of its own (one profiler at a time). ``Conflict`` naming why not."""
    if not is_running(job):
        raise Conflict(f"Job '{job.id}' is not running; a capture is asked of a run that is still going")
    if not 1 <= steps <= MAX_CAPTURE_STEPS or (start_step is not None and start_step < 0):
        raise InvalidInput(f"steps must be 1 to {MAX_CAPTURE_STEPS} and start_step 0 or more")
    try:
        doc = json.loads(store.get(place_of(job).raw_key("job.json")))
    except (NotFound, ValueError):
        doc = None
    if not isinstance(doc, dict) or doc.get("format") != "profilerhub-raw/1" or doc.get("source"):
        raise Conflict(
            f"Job '{job.id}' was not run through the ProfilerHub SDK (no job.json from ph.init yet): "
            "only an SDK run can be asked to capture"
        )
    if not doc.get("torch_version"):
        raise Conflict(
            f"Job '{job.id}''s run has no torch (not imported at ph.init): nothing to capture with"
        )
    if doc.get("torch_profiler"):
        raise Conflict(
            f"Job '{job.id}''s run already runs the PyTorch profiler on its own schedule "
            "(ph.init(torch_profiler=...)); one profiler runs at a time"
        )
    return {
        "id": uuid.uuid4().hex[:12],
        "steps": steps,
        "start_step": start_step,
        "record_shapes": bool(record_shapes),
        "requested_at": utcnow().isoformat(),
        "by": actor,
    }


__all__ = [
    "MAX_CAPTURE_STEPS",
    "capture_request",
    "USER_STOP",
    "find_job",
    "is_running",
    "job_series",
    "job_target",
    "owner_of",
    "request_stop",
    "run_rank",
    "visible_jobs",
]
