"""User profiles: ``/domains/{domain}/users`` and ``/domains/{domain}/users/{user}``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Response

from profilerhub_core.db.models import UserProfile
from profilerhub_core.records import users
from profilerhub_hub.deps import PageDep, Resolved, SessionDep, allow
from profilerhub_hub.deps.door import DoorDep
from profilerhub_hub.permissions import Action
from profilerhub_hub.routes.paths import IN_DOMAIN, OF_USER, api_router
from profilerhub_hub.schemas import Page, UserCreate, UserRead
from profilerhub_hub.usecases import users as user_cases

router = api_router("/domains/{domain}/users", tags=["users"])


@router.post("", status_code=201, openapi_extra=IN_DOMAIN)
def create_user(
    body: UserCreate, door: DoorDep, target: Annotated[Resolved, allow(Action.CreateUserProfile)]
) -> UserRead:
    return UserRead.of(user_cases.create_user(door, target, body.name, body.role))


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
def delete_user(door: DoorDep, target: Annotated[Resolved, allow(Action.DeleteUserProfile)]) -> Response:
    user_cases.delete_user(door, target)  # and the user's jobs' storage, by id
    return Response(status_code=204)
