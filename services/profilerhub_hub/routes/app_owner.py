"""What a profiler app may ask the hub: its owner's jobs, ``GET /apps/{app_id}/owner/jobs``.

An app holds no database URL and no user token, so it cannot know on its own which jobs its owner
has; walking storage would show whatever objects lie there, a deleted job's leftovers included.
Instead it forwards the hub-signed token of the request it is serving (audience = the app,
subject = its owner, valid a minute) and the hub answers from its records: it checks it signed the
token, that the app is live and owned by the subject, and lists that user's jobs. The app then
reads storage only under those job ids (``{domain_id}/{user_id}/jobs/{job_id}/``).

Any failure of the token, a missing app or a deleted one answers 401 alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import sqlalchemy as sa
from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from profilerhub_core.apptokens import hub_signing_key, verify_app_token
from profilerhub_core.db.models import App, AppStatus, Job, JobStatus
from profilerhub_core.errors import Unauthorized
from profilerhub_hub.deps import SessionDep
from profilerhub_hub.job_schemas import job_warnings

router = APIRouter(tags=["apps"])

MAX_JOBS = 10_000


class OwnerJob(BaseModel):
    job_id: str
    name: str
    status: JobStatus
    failure_reason: str | None
    warnings: list[str] = Field(default_factory=list, description="Undelivered and left-out files.")
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None


class OwnerJobs(BaseModel):
    domain_id: str
    user_id: str
    items: list[OwnerJob]


def _verified_app(request: Request, session: SessionDep, app_id: str) -> App:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    app = session.get(App, app_id) if len(app_id) <= 64 else None
    if scheme.lower() != "bearer" or not token.strip() or app is None or app.status is AppStatus.Deleted:
        raise Unauthorized("send the app token of a live app: `Authorization: Bearer <app token>`")
    key = getattr(request.app.state, "app_token_key", None)
    if key is None:
        key = request.app.state.app_token_key = hub_signing_key(request.app.state.settings)
    verify_app_token(key, token.strip(), app.id, app.user_id)
    return app


@router.get(
    "/apps/{app_id}/owner/jobs",
    responses={401: {"description": "Not the app token of a live app (any failure alike)"}},
)
def owner_jobs(
    app_id: str,
    request: Request,
    session: SessionDep,
    job_id: Annotated[str | None, Query(max_length=128, description="Only this job.")] = None,
) -> OwnerJobs:
    """The jobs of the app's owner, newest first (for the app itself, with its request's token)."""
    app = _verified_app(request, session, app_id)
    stmt = sa.select(Job).where(Job.user_id == app.user_id)
    if job_id is not None:
        stmt = stmt.where(Job.id == job_id)
    rows = session.scalars(stmt.order_by(Job.created_at.desc(), Job.id.desc()).limit(MAX_JOBS))
    items = [
        OwnerJob(
            job_id=job.id,
            name=job.name,
            status=job.status,
            failure_reason=job.failure_reason,
            warnings=job_warnings(job),
            created_at=job.created_at,
            updated_at=job.updated_at,
            completed_at=job.completed_at,
        )
        for job in rows
    ]
    return OwnerJobs(domain_id=app.domain_id, user_id=app.user_id, items=items)
