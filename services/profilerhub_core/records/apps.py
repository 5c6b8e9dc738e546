"""Apps: create (Pending), read, list, ask to delete, record activity.

Status changes after creation go through ``app_states.transition`` only.  Creating checks the
domain's live-app limit and the one-live-app-per-(user, type, name) rule under a lock on the
domain row, so concurrent requests cannot both slip past either.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from profilerhub_core.db.models import App, AppStatus, AppType, Domain, UserProfile, utcnow
from profilerhub_core.db.session import read_connection
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import Conflict, InvalidInput, LimitExceeded, NotFound
from profilerhub_core.records import tags
from profilerhub_core.records.app_states import DELETABLE, transition
from profilerhub_core.records.states import rows_changed

LIVE = sa.and_(App.status != AppStatus.Deleted)


def app_not_found(user_name: str, app_type: str, app_name: str) -> NotFound:
    return NotFound(f"App '{app_type}/{app_name}' not found for user '{user_name}'")


def get_app_by_id(session: Session, app_id: str) -> App | None:
    return session.get(App, app_id)


# Built once: every describe, open and delete of an app runs it (building costs more than the query).
_APP_BY_NAME = (
    sa.select(App)
    .where(
        App.user_id == sa.bindparam("user_id"),
        App.app_type == sa.bindparam("app_type"),
        App.app_name == sa.bindparam("app_name"),
    )
    .order_by((App.status == AppStatus.Deleted).asc(), App.created_at.desc())
    .limit(1)
)


def get_app(session: Session, user: UserProfile, app_type: AppType, app_name: str) -> App | None:
    """The live app of that name, else the most recently deleted one (deleted apps stay readable)."""
    params = {"user_id": user.id, "app_type": app_type, "app_name": app_name}
    return session.scalar(_APP_BY_NAME, params)


@dataclass(frozen=True, slots=True)
class AppValues:
    """An app's columns as plain values: what describing it shows (attributes named as ``App``'s)."""

    id: str
    domain_id: str
    app_type: AppType
    app_name: str
    status: AppStatus
    failure_reason: str | None
    created_at: datetime
    status_changed_at: datetime
    last_activity_at: datetime | None


@dataclass(frozen=True, slots=True)
class UserApp:
    """A user profile (ids and names) and their app as ``get_app`` finds it, or None."""

    domain_id: str
    domain_name: str
    user_id: str
    user_name: str
    app: AppValues | None


_APP_VALUES = [getattr(App, field.name) for field in fields(AppValues)]
# A Core select (plain rows, no ORM objects to build: that cost more than the query itself), built
# once; run on ``read_connection``.
_USER_APP = (
    sa.select(UserProfile.domain_id, Domain.name, UserProfile.id, UserProfile.name, *_APP_VALUES)
    .join(Domain, Domain.id == UserProfile.domain_id)
    .outerjoin(
        App,
        sa.and_(
            App.user_id == UserProfile.id,
            App.app_type == sa.bindparam("app_type"),
            App.app_name == sa.bindparam("app_name"),
        ),
    )
    .where(UserProfile.domain_id == sa.bindparam("domain_id"), UserProfile.name == sa.bindparam("name"))
    .order_by((App.status == AppStatus.Deleted).asc(), App.created_at.desc())
    .limit(1)
)


def get_user_app(
    session: Session, domain_id: str, user_name: str, app_type: AppType, app_name: str
) -> UserApp | None:
    """User ``user_name`` of domain ``domain_id`` and their app ``app_type``/``app_name`` (the live
    one, else the last deleted), read in one query for describing it: the hub's most frequent read."""
    params = {"domain_id": domain_id, "name": user_name, "app_type": app_type, "app_name": app_name}
    with read_connection(session) as connection:
        row = connection.execute(_USER_APP, params).first()
    if row is None:
        return None
    app = AppValues(*row[4:]) if row[4] is not None else None
    return UserApp(row[0], row[1], row[2], row[3], app)


def require_app(session: Session, user: UserProfile, app_type: AppType, app_name: str) -> App:
    app = get_app(session, user, app_type, app_name)
    if app is None:
        raise app_not_found(user.name, app_type, app_name)
    return app


def live_apps_in_domain(session: Session, domain: Domain) -> int:
    return session.scalar(sa.select(sa.func.count()).where(App.domain_id == domain.id, LIVE)) or 0


AVAILABLE_APP_TYPES = frozenset({AppType.DetailedProfiler, AppType.TensorBoard})
"""The app types this hub can run (each has its own app: ``profilerhub app --type``). A type
outside it is refused with a 400 rather than started as some other app."""


def create_user_app(
    session: Session, domain: Domain, user: UserProfile, app_type: AppType, app_name: str
) -> App:
    """Add a Pending app (flushed).  ``InvalidInput`` for an app type this hub cannot run,
    ``Conflict`` if a live one of that name exists, ``LimitExceeded`` past the domain's ``max_live_apps``.
    Not audited: the operation's row (``CreateApp``) is the hub's use case's."""
    if app_type not in AVAILABLE_APP_TYPES:
        available = ", ".join(sorted(t.value for t in AVAILABLE_APP_TYPES))
        raise InvalidInput(
            f"App type '{app_type.value}' is not available on this hub (available: {available})"
        )
    # A no-op write takes the domain row's lock (PostgreSQL) or the write lock (SQLite) first,
    # so the count below cannot be overtaken by a concurrent create.
    session.execute(sa.update(Domain).where(Domain.id == domain.id).values(updated_at=Domain.updated_at))
    existing = session.scalar(
        sa.select(App).where(App.user_id == user.id, App.app_type == app_type, App.app_name == app_name, LIVE)
    )
    if existing is not None:
        raise Conflict(
            f"App '{app_type}/{app_name}' of user '{user.name}' already exists ({existing.status})"
        )
    limit = DomainSettings.of(domain.settings).max_live_apps
    if live_apps_in_domain(session, domain) >= limit:
        raise LimitExceeded(f"Domain '{domain.name}' has reached its limit of {limit} live apps")
    app = App(
        domain_id=domain.id, user_id=user.id, app_type=app_type, app_name=app_name, status=AppStatus.Pending
    )
    try:
        with session.begin_nested():
            session.add(app)
            session.flush()
    except IntegrityError:
        raise Conflict(f"App '{app_type}/{app_name}' of user '{user.name}' already exists") from None
    return app


def request_delete(session: Session, app: App) -> App:
    """Move an InService or Failed app to Deleting (flushed); ``Conflict`` from any other state.
    Not audited: the operation's row (``DeleteApp``) is the hub's use case's."""
    current = AppStatus(app.status)
    moved = current in DELETABLE and transition(session, app.id, current, AppStatus.Deleting, audited=False)
    if not moved:
        session.refresh(app)
        raise Conflict(f"App is {app.status}; only InService or Failed apps can be deleted")
    tags.clear_tags(session, app)  # the app row stays readable as Deleted; its tags go now
    session.refresh(app)
    return app


def apps_query(
    *, domain_id: str | None = None, user_id: str | None = None, status: AppStatus | None = None
) -> sa.Select[App]:
    """Apps matching every given filter (unordered; the caller paginates)."""
    stmt = sa.select(App)
    if domain_id is not None:
        stmt = stmt.where(App.domain_id == domain_id)
    if user_id is not None:
        stmt = stmt.where(App.user_id == user_id)
    if status is not None:
        stmt = stmt.where(App.status == status)
    return stmt


def record_activity(session: Session, seen: dict[str, datetime]) -> None:
    """Set ``last_activity_at`` of each app id to its time, never moving it backwards."""
    for app_id, at in seen.items():
        session.execute(
            sa.update(App)
            .where(App.id == app_id, sa.or_(App.last_activity_at.is_(None), App.last_activity_at < at))
            .values(last_activity_at=at)
            .execution_options(synchronize_session=False)
        )
    session.flush()


def save_instance(session: Session, app_id: str, status: AppStatus, **fields: object) -> bool:
    """Update the endpoint/spawner state of an app still in ``status`` (never the status itself)."""
    allowed = {k: v for k, v in fields.items() if k in ("endpoint", "spawner_state")}
    result = session.execute(
        sa.update(App)
        .where(App.id == app_id, App.status == status)
        .values(updated_at=utcnow(), **allowed)
        .execution_options(synchronize_session=False)
    )
    return bool(rows_changed(result))


__all__ = [
    "AppValues",
    "UserApp",
    "app_not_found",
    "apps_query",
    "create_user_app",
    "get_app",
    "get_app_by_id",
    "get_user_app",
    "live_apps_in_domain",
    "record_activity",
    "request_delete",
    "require_app",
    "save_instance",
]
