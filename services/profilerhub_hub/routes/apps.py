"""Apps: ``/domains/{domain}/users/{user}/apps[/{app_type}/{app_name}]`` and ``/apps`` (admins).

The changing routes call the use cases (``usecases.apps``): they write, audit and commit, then
enqueue the worker task with the app id only.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

import sqlalchemy as sa
from fastapi import Query
from sqlalchemy.orm import Session

from profilerhub_core.db.models import App, AppStatus, AppType, Domain, UserProfile, utcnow
from profilerhub_core.records import apps
from profilerhub_hub.app_schemas import (
    DEFAULT_PRESIGNED_SECONDS,
    AppCreate,
    AppRead,
    PresignedUrlCreate,
    PresignedUrlRead,
)
from profilerhub_hub.deps import PageDep, Resolved, SessionDep, allow
from profilerhub_hub.deps.door import DoorDep
from profilerhub_hub.permissions import Action, visible_domain
from profilerhub_hub.routes.paths import OF_USER, ONE_APP, USER_APPS, api_router
from profilerhub_hub.schemas import Page
from profilerhub_hub.usecases import apps as app_cases

router = api_router(tags=["apps"])

StatusFilter = Annotated[AppStatus | None, Query(description="Only apps in this status.")]


def _read(target: Resolved, app: App) -> AppRead:
    assert target.domain is not None and target.user is not None
    return AppRead.of(app, target.domain.name, target.user.name)


def _the_app(session: Session, target: Resolved, app_type: AppType, app_name: str) -> App:
    assert target.user is not None
    return apps.require_app(session, target.user, app_type, app_name)


# name= keeps the route's name (and OpenAPI operationId) the action's; the function is named apart
# from the ASGI factories (`create_app(settings)` in profilerhub_hub.main and profilerhub_app.main).
@router.post(USER_APPS, status_code=202, openapi_extra=OF_USER, name="create_app")
def create_user_app(
    body: AppCreate, door: DoorDep, target: Annotated[Resolved, allow(Action.CreateApp)]
) -> AppRead:
    return _read(target, app_cases.create_app(door, target, body.app_type, body.app_name))


@router.get(USER_APPS, openapi_extra=OF_USER)
def list_apps(
    session: SessionDep,
    page: PageDep,
    target: Annotated[Resolved, allow(Action.ListApps)],
    status: StatusFilter = None,
) -> Page[AppRead]:
    assert target.user is not None
    stmt = apps.apps_query(user_id=target.user.id, status=status)
    scope = f"apps:{target.user.id}:{status}"
    return page.fetch(session, stmt, [App.created_at, App.id], lambda a: _read(target, a), scope=scope)


@router.get(ONE_APP, openapi_extra=OF_USER)
def describe_app(
    app_type: AppType,
    app_name: str,
    session: SessionDep,
    target: Annotated[Resolved, allow(Action.DescribeApp)],
) -> AppRead:
    return _read(target, _the_app(session, target, app_type, app_name))


@router.delete(ONE_APP, status_code=202, openapi_extra=OF_USER)
def delete_app(
    app_type: AppType, app_name: str, door: DoorDep, target: Annotated[Resolved, allow(Action.DeleteApp)]
) -> AppRead:
    app = _the_app(door.session, target, app_type, app_name)
    return _read(target, app_cases.delete_app(door, target, app))


@router.post(ONE_APP + "/presigned-url", openapi_extra=OF_USER)
def create_presigned_url(
    app_type: AppType,
    app_name: str,
    door: DoorDep,
    target: Annotated[Resolved, allow(Action.OpenApp)],
    body: PresignedUrlCreate | None = None,
) -> PresignedUrlRead:
    """A one-time URL that opens the app in a browser (sets its session cookie), for its owner only."""
    app = _the_app(door.session, target, app_type, app_name)
    ttl = body.expires_in_seconds if body is not None else DEFAULT_PRESIGNED_SECONDS
    url = app_cases.open_app(door, target, app, ttl)
    return PresignedUrlRead(url=url, expires_at=utcnow() + timedelta(seconds=ttl))


@router.get("/apps")
def list_all_apps(
    session: SessionDep,
    page: PageDep,
    target: Annotated[Resolved, allow(Action.ListAllApps)],
    status: StatusFilter = None,
) -> Page[AppRead]:
    """Every app the caller administers: all of them for platform admins, their domain's for domain admins."""
    domain_id = visible_domain(target.caller)
    stmt = apps.apps_query(domain_id=domain_id, status=status)

    def read(rows: list[App]) -> list[AppRead]:
        names = _names(session, rows)
        return [AppRead.of(a, *names[a.id]) for a in rows]

    scope = f"all-apps:{domain_id}:{status}"
    return page.fetch_rows(session, stmt, [App.created_at, App.id], read, scope=scope)


def _names(session: Session, rows: list[App]) -> dict[str, tuple[str, str]]:
    """``app_id -> (domain name, user name)`` for a page of apps, in one query."""
    if not rows:
        return {}
    stmt = (
        sa.select(App.id, Domain.name, UserProfile.name)
        .join(UserProfile, App.user_id == UserProfile.id)
        .join(Domain, App.domain_id == Domain.id)
        .where(App.id.in_([a.id for a in rows]))
    )
    return {app_id: (domain, user) for app_id, domain, user in session.execute(stmt)}
