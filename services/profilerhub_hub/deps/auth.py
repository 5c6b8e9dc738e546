"""Authentication: the bearer token -> the request's ``Caller`` (cached per request and per token).

CallerDep          the authenticated Caller (401 without a valid bearer token)
caller_from_token  the same, for the app proxy
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import Unauthorized
from profilerhub_core.records import tokens
from profilerhub_core.settings import Settings
from profilerhub_hub.deps.session import run_step
from profilerhub_hub.permissions import Caller

_bearer = HTTPBearer(auto_error=False, description="An API token: `Authorization: Bearer <token>`")


def caller_from_token(
    session: Session, secret: str, settings: Settings, *, read_only: bool = False
) -> Caller:
    """Authenticate ``secret`` (raises ``Unauthorized``); also used by the app proxy."""
    return caller_of(_owner(session, secret, settings, read_only))


def _owner(session: Session, secret: str, settings: Settings, read_only: bool) -> tokens.TokenOwner:
    return tokens.authenticate(
        session, secret, touch_seconds=settings.token_touch_seconds, read_only=read_only
    )


def caller_of(owner: tokens.TokenOwner) -> Caller:
    return Caller(
        user_id=owner.user_id,
        user_name=owner.user_name,
        domain_id=owner.domain_id,
        domain_name=owner.domain_name,
        role=owner.role.value,
        is_platform_admin=owner.is_platform_admin,
        users_manage_own_apps=DomainSettings.of(owner.domain_settings).users_manage_own_apps,
        token_id=owner.token_id,
        scopes=owner.scopes,
    )


Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def authenticate(
    request: Request, session: Session, settings: Settings, credentials: Credentials, read_only: bool = False
) -> Caller:
    """The request's caller, authenticated once per request (cached on ``request.state``) and
    looked up in the database at most once per token every ``token_cache_seconds``."""
    cached: Caller | None = getattr(request.state, "caller", None)
    if cached is not None:
        return cached
    if credentials is None or not credentials.credentials:
        raise Unauthorized("Missing credentials: send `Authorization: Bearer <token>`")
    secret, cache = credentials.credentials, request.app.state.token_cache
    caller = cache.get(secret)
    if caller is None:
        owner = _owner(session, secret, settings, read_only)
        caller = caller_of(owner)
        cache.put(secret, caller, owner.expires_at)
    request.state.caller = caller
    return caller


async def get_caller(request: Request, credentials: Credentials) -> Caller:
    settings = request.app.state.settings
    return await run_step(
        request, lambda session, read_only: authenticate(request, session, settings, credentials, read_only)
    )


CallerDep = Annotated[Caller, Depends(get_caller)]


__all__ = ["CallerDep", "Credentials", "authenticate", "caller_from_token", "caller_of"]
