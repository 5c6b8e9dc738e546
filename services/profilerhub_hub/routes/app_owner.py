"""What a profiler app may ask the hub: its owner's jobs, ``GET /apps/{app_id}/owner/jobs``, and
for one running job its log and the requests its dashboard's buttons make:

    GET  /apps/{app_id}/owner/jobs/{job_id}/logs      a page of a rank's printed lines (as REST's …/logs)
    POST /apps/{app_id}/owner/jobs/{job_id}/stop      ask the run to stop (as REST's …/stop)
    POST /apps/{app_id}/owner/jobs/{job_id}/captures  ask for a PyTorch-profiler capture (as REST's)

An app holds no database URL and no user token, so it cannot know on its own which jobs its owner
has; walking storage would show whatever objects lie there, a deleted job's leftovers included.
Instead it forwards the hub-signed token of the request it is serving (audience = the app,
subject = its owner, valid a minute) and the hub answers from its records: it checks it signed the
token, that the app is live and owned by the subject, and lists that user's jobs. The app then
reads storage only under those job ids (``{domain_id}/{user_id}/jobs/{job_id}/``).

Any failure of the token, a missing app or a deleted one answers 401 alike.

The job routes act as the app's owner through the ``app`` door: the caller is the owner with the
scopes ``ReadJob``, ``StopJob`` and ``UpdateJob`` alone, authorized by the same
``permissions.authorize`` and handled by the same use cases as REST (one audit row each, its
``via`` ``app``). A job of someone else answers 404, like a missing one.

The list is paged, sorted and filtered here, in SQL, so an owner with thousands of jobs costs the
app one small page: ``limit`` (≤ the hub's ``max_page_size``, 1000) and ``next_token`` (keyset,
signed, bound to the sort and filters it came from), ``sort`` (``created_at``, ``updated_at``,
``name``, ``status``, and the figures ingest writes on the row when a job becomes Ready:
``duration_s``, ``steps``, ``gpus``, ``ranks``, whose nulls (not Ready yet, or ingested before
they existed) sort last in either order) and ``order``, ``name_contains`` (case-insensitive, or
a job id's prefix) and ``status`` (one or several, comma-separated). The answer adds ``total``
(jobs matching the filters) and ``status_counts`` (per status, for the name filter alone).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import Query, Request
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from profilerhub_core.db.models import App, AppStatus, Job, JobStatus, UserProfile
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import InvalidInput, Unauthorized
from profilerhub_core.records import domains, jobs
from profilerhub_core.records.ingest_queue import FairShare, status_reason
from profilerhub_hub import job_logs
from profilerhub_hub.deps import PageDep, SessionDep
from profilerhub_hub.deps.targets import Resolved, authorize_resolved, resolved_user
from profilerhub_hub.job_schemas import JobCapture, JobCaptureCreate, JobLog, job_warnings
from profilerhub_hub.permissions import Action, Caller
from profilerhub_hub.routes.paths import api_router
from profilerhub_hub.services import services
from profilerhub_hub.usecases import jobs as job_cases
from profilerhub_hub.usecases.door import door_of

router = api_router(tags=["apps"])


class JobSort(StrEnum):
    created_at = "created_at"
    updated_at = "updated_at"
    name = "name"
    status = "status"
    duration_s = "duration_s"
    steps = "steps"
    gpus = "gpus"
    ranks = "ranks"


class SortOrder(StrEnum):
    asc = "asc"
    desc = "desc"


_SORT_COLUMNS: dict[JobSort, Any] = {
    JobSort.created_at: Job.created_at,
    JobSort.updated_at: Job.updated_at,
    JobSort.name: Job.name,
    JobSort.status: Job.status,
    JobSort.duration_s: Job.duration_s,
    JobSort.steps: Job.steps,
    JobSort.gpus: Job.gpus,
    JobSort.ranks: Job.ranks,
}


class OwnerJob(BaseModel):
    job_id: str
    name: str
    status: JobStatus
    failure_reason: str | None
    status_reason: str | None = Field(
        default=None, description="Where a completed job waits in the ingest queue (as the REST job's)."
    )
    warnings: list[str] = Field(default_factory=list, description="Undelivered and left-out files.")
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    duration_s: float | None = Field(
        default=None, description="Run duration (s) ingest found; null until Ready."
    )
    steps: int | None = Field(default=None, description="Training steps ingest counted; null until Ready.")
    gpus: int | None = Field(default=None, description="Most GPUs any one trace used; null until Ready.")
    ranks: int | None = Field(default=None, description="Ranks (traces) ingest read; null until Ready.")
    stop_request: dict[str, Any] | None = Field(
        default=None, description="Who asked the run to stop, and when (as the REST job's)."
    )
    captures: list[dict[str, Any]] = Field(
        default_factory=list, description="PyTorch-profiler captures asked of the run."
    )


class OwnerJobs(BaseModel):
    domain_id: str
    user_id: str
    items: list[OwnerJob]
    next_token: str | None = Field(default=None, description="Pass back for the next page; null on the last.")
    total: int = Field(description="Jobs that match the filters (all pages).")
    status_counts: dict[str, int] = Field(description="Jobs per status matching the name filter alone.")


def _verified_app(request: Request, session: SessionDep, app_id: str) -> App:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    app = session.get(App, app_id) if len(app_id) <= 64 else None
    if scheme.lower() != "bearer" or not token.strip() or app is None or app.status is AppStatus.Deleted:
        raise Unauthorized("send the app token of a live app: `Authorization: Bearer <app token>`")
    from profilerhub_core.apptokens import verify_app_token  # joserfc: not on the hub's start

    verify_app_token(services(request).app_token_key, token.strip(), app.id, app.user_id)
    return app


def _statuses(raw: str | None) -> list[JobStatus]:
    if not raw:
        return []
    wanted = []
    for part in (p.strip() for p in raw.split(",")):
        try:
            wanted.append(JobStatus(part))
        except ValueError:
            names = ", ".join(s.value for s in JobStatus)
            raise InvalidInput(f"status must be one of {names}, not {part[:40]!r}") from None
    return wanted


def _name_filter(text: str) -> Any:
    """Name contains ``text`` (any case), or the job id starts with it."""
    lowered = text.lower()
    return sa.or_(
        sa.func.lower(Job.name).contains(lowered, autoescape=True),
        Job.id.startswith(lowered, autoescape=True),
    )


@router.get(
    "/apps/{app_id}/owner/jobs",
    responses={
        400: {"description": "A status the hub does not know, or a next_token of another listing"},
        401: {"description": "Not the app token of a live app (any failure alike)"},
    },
)
def owner_jobs(
    app_id: str,
    request: Request,
    session: SessionDep,
    page: PageDep,
    job_id: Annotated[str | None, Query(max_length=128, description="Only this job.")] = None,
    sort: Annotated[
        JobSort, Query(description="Column to sort by (a figure's nulls sort last either way).")
    ] = JobSort.created_at,
    order: Annotated[SortOrder, Query(description="asc or desc.")] = SortOrder.desc,
    name_contains: Annotated[
        str | None, Query(max_length=200, description="Name contains this (any case), or id starts with it.")
    ] = None,
    status: Annotated[
        str | None, Query(max_length=200, description="Only jobs in these statuses (comma-separated).")
    ] = None,
) -> OwnerJobs:
    """One page of the jobs of the app's owner (for the app itself, with its request's token)."""
    app = _verified_app(request, session, app_id)
    wanted = _statuses(status)
    mine = [Job.user_id == app.user_id]
    if job_id is not None:
        mine.append(Job.id == job_id)
    if name_contains:
        mine.append(_name_filter(name_contains))
    counted = session.execute(sa.select(Job.status, sa.func.count()).where(*mine).group_by(Job.status)).all()
    status_counts = {JobStatus(s).value: int(n) for s, n in counted}
    filters = [*mine, Job.status.in_(wanted)] if wanted else mine
    total = sum(n for s, n in status_counts.items() if not wanted or JobStatus(s) in wanted)
    scope = f"owner-jobs:{app.id}:{sort}:{order}:{job_id}:{name_contains}:{','.join(sorted(wanted))}"
    share = FairShare.of(services(request).settings)
    result = page.fetch(
        session,
        sa.select(Job).where(*filters),
        [_SORT_COLUMNS[sort], Job.id],
        lambda job: _owner_job(job, status_reason(session, job, share)),
        scope=scope,
        descending=order is SortOrder.desc,
    )
    return OwnerJobs(
        domain_id=app.domain_id,
        user_id=app.user_id,
        items=result.items,
        next_token=result.next_token,
        total=total,
        status_counts=status_counts,
    )


def _owner_job(job: Job, reason: str | None = None) -> OwnerJob:
    return OwnerJob(
        job_id=job.id,
        name=job.name,
        status=job.status,
        failure_reason=job.failure_reason,
        status_reason=reason,
        warnings=job_warnings(job),
        created_at=job.created_at,
        updated_at=job.updated_at,
        completed_at=job.completed_at,
        duration_s=job.duration_s,
        steps=job.steps,
        gpus=job.gpus,
        ranks=job.ranks,
        stop_request=job.stop_request,
        captures=list(job.captures or []),
    )


#: What the app door's caller may do: read, stop and capture its owner's jobs, nothing else.
APP_SCOPES = (Action.ReadJob.value, Action.StopJob.value, Action.UpdateJob.value)
OWNER_JOB = "/apps/{app_id}/owner/jobs/{job_id}"
_APP_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "Not the app token of a live app (any failure alike)"},
    404: {"description": "No such job of the app's owner"},
}


def _as_owner(request: Request, session: Session, app_id: str, action: Action) -> Resolved:
    """The app's owner as the caller of ``action`` on their own profile (``allow``'s answer for
    the app door): authorized by ``permissions.authorize`` like any other door's."""
    app = _verified_app(request, session, app_id)
    user = session.get(UserProfile, app.user_id)
    if user is None:
        raise Unauthorized("send the app token of a live app: `Authorization: Bearer <app token>`")
    settings = DomainSettings.of(user.domain.settings)
    caller = Caller(
        user_id=user.id,
        user_name=user.name,
        domain_id=user.domain_id,
        domain_name=user.domain.name,
        role=user.role.value,
        is_platform_admin=user.is_platform_admin,
        users_manage_own_apps=settings.users_manage_own_apps,
        token_id=f"app:{app.id}",
        scopes=APP_SCOPES,
        source_kind="app",
    )
    resolved = resolved_user(caller, user, domains.domain_not_found(user.domain.name))
    return authorize_resolved(session, resolved, action)


@router.get(OWNER_JOB + "/logs", responses=_APP_ERRORS)
def owner_job_log(
    app_id: str,
    job_id: str,
    request: Request,
    session: SessionDep,
    rank: Annotated[int | None, Query(ge=0, description="The rank's log; default the first.")] = None,
    offset: Annotated[int, Query(ge=0, description="Lines to skip (a previous answer's next_offset).")] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000, description="Lines at most.")] = 1000,
) -> JobLog:
    """The lines the owner's job printed (for the app's log panel, with its request's token)."""
    target = _as_owner(request, session, app_id, Action.ReadJob)
    assert target.user is not None
    job = jobs.require_job(session, target.user, job_id)
    session.close()  # no connection held while storage is read
    return job_logs.page(services(request).storage, job, rank, offset, limit)


@router.post(OWNER_JOB + "/stop", status_code=202, responses=_APP_ERRORS)
def owner_job_stop(app_id: str, job_id: str, request: Request, session: SessionDep) -> OwnerJob:
    """Ask the owner's running job to stop (the app's Stop button; as REST's ``…/stop``)."""
    target = _as_owner(request, session, app_id, Action.StopJob)
    assert target.user is not None
    door = door_of(services(request), session, "app")
    return _owner_job(job_cases.stop_job(door, target, jobs.require_job(session, target.user, job_id)))


@router.post(OWNER_JOB + "/captures", status_code=202, responses=_APP_ERRORS)
def owner_job_capture(
    app_id: str, job_id: str, body: JobCaptureCreate, request: Request, session: SessionDep
) -> JobCapture:
    """Ask the owner's running job for a PyTorch-profiler capture (the app's button; as REST's)."""
    target = _as_owner(request, session, app_id, Action.UpdateJob)
    assert target.user is not None
    door = door_of(services(request), session, "app")
    job = jobs.require_job(session, target.user, job_id)
    capture = job_cases.capture_job(door, target, job, body.steps, body.start_step, body.record_shapes)
    return JobCapture(job_id=job.id, **capture)
