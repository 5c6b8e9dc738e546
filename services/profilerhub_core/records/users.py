"""User profiles. Platform administrators are the admins of the reserved domain ``system``."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, contains_eager

from profilerhub_core.db.models import SYSTEM_DOMAIN, App, AppStatus, Domain, Role, UserProfile, utcnow
from profilerhub_core.errors import Conflict, InvalidInput, NotFound


def user_not_found(domain: str, name: str) -> NotFound:
    return NotFound(f"User profile '{name}' not found in domain '{domain}'")


def get_user(session: Session, domain: Domain, name: str) -> UserProfile | None:
    return session.scalar(
        sa.select(UserProfile).where(UserProfile.domain_id == domain.id, UserProfile.name == name)
    )


# Built once: this lookup runs on most requests (statement construction costs more than the query).
_USER_BY_NAMES = (
    sa.select(UserProfile)
    .join(UserProfile.domain)
    .options(contains_eager(UserProfile.domain))
    .where(Domain.name == sa.bindparam("domain"), UserProfile.name == sa.bindparam("name"))
)


def get_user_by_names(session: Session, domain: str, name: str) -> UserProfile | None:
    """User ``name`` of domain ``domain`` (its ``domain`` loaded by the same query)."""
    return session.scalar(_USER_BY_NAMES, {"domain": domain, "name": name})


_USER_BY_DOMAIN_ID = (
    sa.select(UserProfile)
    .join(UserProfile.domain)
    .options(contains_eager(UserProfile.domain))
    .where(UserProfile.domain_id == sa.bindparam("domain_id"), UserProfile.name == sa.bindparam("name"))
)


def get_user_in_domain(session: Session, domain_id: str, name: str) -> UserProfile | None:
    """User ``name`` of the domain with id ``domain_id`` (its ``domain`` loaded by the same query)."""
    return session.scalar(_USER_BY_DOMAIN_ID, {"domain_id": domain_id, "name": name})


def _check_role(domain: Domain, role: Role) -> None:
    if domain.name == SYSTEM_DOMAIN and role != Role.admin:
        raise InvalidInput(f"Domain '{SYSTEM_DOMAIN}' holds platform administrators only; use role 'admin'")


def create_user(session: Session, domain: Domain, name: str, role: Role) -> UserProfile:
    _check_role(domain, role)
    if get_user(session, domain, name) is not None:
        raise Conflict(f"User profile '{name}' already exists in domain '{domain.name}'")
    user = UserProfile(
        domain_id=domain.id,
        domain=domain,
        name=name,
        role=role,
        is_platform_admin=domain.name == SYSTEM_DOMAIN,
    )
    session.add(user)
    session.flush()
    return user


def update_user(
    session: Session,
    user: UserProfile,
    *,
    role: Role | None = None,
    aws_settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Change the profile's role and/or replace members of its stored SageMaker ``UserSettings``
    (flushed); returns what changed as ``{field: [old, new]}`` (settings by member name)."""
    changes: dict[str, Any] = {}
    if role is not None and role != user.role:
        _check_role(user.domain, role)
        changes["role"] = [user.role.value, role.value]
        user.role = role
    if aws_settings:
        stored = dict(user.aws_settings or {})
        changed = sorted(k for k, v in aws_settings.items() if stored.get(k) != v)
        if changed:
            changes["user_settings"] = changed
            user.aws_settings = stored | aws_settings
    if changes:
        user.updated_at = utcnow()
        session.flush()
    return changes


def live_app_count(session: Session, user: UserProfile) -> int:
    stmt = sa.select(sa.func.count()).where(App.user_id == user.id, App.status != AppStatus.Deleted)
    return session.scalar(stmt) or 0


def delete_user(session: Session, user: UserProfile) -> None:
    """Delete a profile with its tokens; refused while it has live apps or is the last platform admin."""
    live = live_app_count(session, user)
    if live:
        raise Conflict(f"User profile '{user.name}' has {live} live app(s); delete them first")
    if user.is_platform_admin:
        admins = (
            session.scalar(sa.select(sa.func.count()).where(UserProfile.is_platform_admin.is_(True))) or 0
        )
        if admins <= 1:
            raise Conflict("Cannot delete the last platform administrator")
    session.delete(user)
    session.flush()


def users_query(domain: Domain) -> sa.Select[UserProfile]:
    return sa.select(UserProfile).where(UserProfile.domain_id == domain.id)


__all__ = [
    "create_user",
    "delete_user",
    "get_user",
    "get_user_by_names",
    "get_user_in_domain",
    "live_app_count",
    "update_user",
    "user_not_found",
    "users_query",
]
