"""Authorization: ``allow(Action.X)``, the dependency every route declares.

``allow`` looks up the ``{domain}`` and ``{user}`` path parameters (404 when missing, or hidden
from this caller) and asks ``permissions.authorize``; a refused change is written to the audit
log. The route gets the resolved target back:

    @router.get("/domains/{domain}/users/{user}")
    def describe_user(target: Annotated[Resolved, allow(Action.DescribeUserProfile)]) -> UserRead:
        return UserRead.of(target.user)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from profilerhub_core.db.models import Domain, UserProfile
from profilerhub_core.db.session import WriteRequired
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import AccessDenied, NotFound
from profilerhub_core.names import is_valid_name
from profilerhub_core.records import domains, users
from profilerhub_hub.audit import commit_refused
from profilerhub_hub.deps.auth import Credentials, authenticate
from profilerhub_hub.deps.session import run_step
from profilerhub_hub.permissions import (
    MUTATING,
    Action,
    Caller,
    Resolved,
    Target,
    authorize,
    check_domain_visible,
)
from profilerhub_hub.services import services


def resolve(session: Session, caller: Caller, path: dict[str, Any]) -> Resolved:
    """Look up ``{domain}`` and ``{user}`` from the path, hiding what the caller may not see."""
    if "domain" not in path:
        return Resolved(caller, Target())
    name = path["domain"]
    domain_missing = domains.domain_not_found(name)
    if "user" in path and is_valid_name(name) and is_valid_name(path["user"]):
        # The common case in one query: both exist.
        user = users.get_user_by_names(session, name, path["user"])
        if user is not None:
            return resolved_user(caller, user, domain_missing)
    domain = domains.get_domain(session, name) if is_valid_name(name) else None
    if domain is None:
        raise domain_missing
    resolved = resolved_domain(caller, domain, domain_missing)
    if "user" not in path:
        return resolved
    raise users.user_not_found(domain.name, path["user"])


def resolved_domain(caller: Caller, domain: Domain, domain_missing: NotFound) -> Resolved:
    """A found domain as the request's target; ``domain_missing`` when the caller may not see it."""
    check_domain_visible(caller, domain.id, domain_missing)
    return Resolved(caller, Target(domain_id=domain.id, not_found=domain_missing), domain)


def resolved_user(caller: Caller, user: UserProfile, domain_missing: NotFound) -> Resolved:
    """A found user profile (its ``domain`` loaded) as the request's target; ``domain_missing``
    when the caller may not see its domain (``authorize`` hides other users' profiles)."""
    target = owner_target(caller, user.domain_id, user.domain.name, user.id, user.name, domain_missing)
    if DomainSettings.of(user.domain.settings).allow_impersonation:
        target = replace(target, allow_impersonation=True)
    return Resolved(caller, target, user.domain, user)


def owner_target(
    caller: Caller, domain_id: str, domain_name: str, user_id: str, user_name: str, domain_missing: NotFound
) -> Target:
    """A user profile found by its ids and names as the target of an action (as ``resolved_user``)."""
    check_domain_visible(caller, domain_id, domain_missing)
    user_missing = users.user_not_found(domain_name, user_name)
    return Target(domain_id=domain_id, owner_id=user_id, not_found=user_missing)


def authorize_resolved(
    session: Session, resolved: Resolved, action: Action, read_only: bool = False
) -> Resolved:
    """``authorize`` the caller's ``action`` on ``resolved``; a refused change is audited (and
    committed alone), and so is any refused ``OpenApp`` (an administrator's, an impersonating
    credential's, another user's: the answer hides what the audit log records). Every door onto
    the API (REST routes, the SageMaker endpoint) calls this."""
    try:
        authorize(resolved.caller, action, resolved.target)
    except (AccessDenied, NotFound) as refused:
        if action is Action.OpenApp or (action in MUTATING and isinstance(refused, AccessDenied)):
            if read_only:
                raise WriteRequired("a refusal is audited") from refused
            commit_refused(session, resolved, action, refused.message)
        raise
    return resolved


def allow(action: Action) -> Any:
    """A dependency that authorizes ``action`` on the request's target and returns ``Resolved``."""

    async def dependency(request: Request, credentials: Credentials) -> Resolved:
        settings = services(request).settings

        def step(session: Session, read_only: bool) -> Resolved:
            caller = authenticate(request, session, settings, credentials, read_only)
            return _authorized(request, session, caller, read_only)

        return await run_step(request, step)

    def _authorized(request: Request, session: Session, caller: Caller, read_only: bool) -> Resolved:
        return authorize_resolved(session, resolve(session, caller, request.path_params), action, read_only)

    dependency.__name__ = f"allow_{action.value}"
    return Depends(dependency)


__all__ = [
    "Resolved",
    "allow",
    "authorize_resolved",
    "owner_target",
    "resolve",
    "resolved_domain",
    "resolved_user",
]
