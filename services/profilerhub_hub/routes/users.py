"""User profiles: ``/domains/{domain}/users`` and ``/domains/{domain}/users/{user}``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request, Response

from profilerhub_core.db.models import UserProfile
from profilerhub_core.records import users
from profilerhub_core.storage import layout
from profilerhub_hub import job_uploads
from profilerhub_hub.audit import commit_audited
from profilerhub_hub.deps import PageDep, Resolved, SessionDep, allow
from profilerhub_hub.permissions import Action
from profilerhub_hub.routes.paths import IN_DOMAIN, OF_USER
from profilerhub_hub.schemas import Page, UserCreate, UserRead

router = APIRouter(prefix="/domains/{domain}/users", tags=["users"])


@router.post("", status_code=201, openapi_extra=IN_DOMAIN)
def create_user(
    body: UserCreate, session: SessionDep, target: Annotated[Resolved, allow(Action.CreateUserProfile)]
) -> UserRead:
    assert target.domain is not None
    user = users.create_user(session, target.domain, body.name, body.role)
    name = f"{target.domain.name}/{user.name}"
    commit_audited(session, target, Action.CreateUserProfile, name, detail={"role": user.role.value})
    return UserRead.of(user)


@router.get("", openapi_extra=IN_DOMAIN)
def list_users(
    session: SessionDep, page: PageDep, target: Annotated[Resolved, allow(Action.ListUserProfiles)]
) -> Page[UserRead]:
    assert target.domain is not None
    stmt = users.users_query(target.domain)
    return page.fetch(session, stmt, [UserProfile.name], UserRead.of, scope=f"users:{target.domain.id}")


@router.get("/{user}", openapi_extra=OF_USER)
async def describe_user(target: Annotated[Resolved, allow(Action.DescribeUserProfile)]) -> UserRead:
    assert target.user is not None
    return UserRead.of(target.user)


@router.delete("/{user}", status_code=204, openapi_extra=OF_USER)
def delete_user(
    request: Request, session: SessionDep, target: Annotated[Resolved, allow(Action.DeleteUserProfile)]
) -> Response:
    assert target.user is not None and target.domain is not None
    name, prefix = target.name, layout.user_prefix(target.domain.id, target.user.id)
    users.delete_user(session, target.user)
    commit_audited(session, target, Action.DeleteUserProfile, name)
    job_uploads.delete_owned(request.app.state, prefix, f"user {name}")  # the user's jobs, by id
    return Response(status_code=204)
