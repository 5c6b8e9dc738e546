"""Authentication: the bearer token, or the console's session cookie -> the request's ``Caller``
(cached per request, and per token).

CallerDep          the authenticated Caller (401 without a valid bearer token or session)
caller_from_token  the same, for the app proxy

A cookie-carried request that changes state passes the CSRF checks of ``profilerhub_hub.browser``
(same origin as ``public_url``, and the session's CSRF token); a bearer token needs neither, since
a browser never attaches one on its own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from profilerhub_core.db.models import utcnow
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import Unauthorized
from profilerhub_core.records import sessions, tokens
from profilerhub_core.settings import Settings
from profilerhub_hub.browser import CONSOLE_COOKIE, CSRF_HEADER, SAFE_METHODS, check_csrf, check_same_origin
from profilerhub_hub.deps.session import run_step
from profilerhub_hub.permissions import Caller
from profilerhub_hub.ratelimit import TOKEN_FAILURES, RateLimits, client_address
from profilerhub_hub.services import services

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
    """The Caller of a valid token's (or access key's) owner."""
    kind = sessions.ACCESS_KEY if owner.is_access_key else sessions.TOKEN
    return _caller(owner, owner.token_id, owner.created_by, None, kind, owner.expires_at, owner.source)


def caller_of_session(owner: sessions.SessionOwner) -> Caller:
    """The Caller of a browser session (its scopes and impersonation are the credential's it began with)."""
    return _caller(
        owner, f"session:{owner.session_id}", owner.impersonated_by, owner.session_id, owner.source,
        owner.token_expires_at, owner.token_source,
    )  # fmt: skip


def lineage(caller: Caller) -> sessions.Source:
    """What a session or one-time link made by ``caller`` descends from (``records.sessions``):
    the caller's root token and, for a browser session, that session; issued now."""
    return sessions.Source(caller.source_kind, caller.source_token_id, caller.session_id, utcnow())


def _caller(
    owner: tokens.TokenOwner | sessions.SessionOwner,
    token_id: str,
    impersonated_by: str | None,
    session_id: str | None,
    source_kind: str,
    root_expires_at: datetime | None,
    root_source: str | None,
) -> Caller:
    settings = DomainSettings.of(owner.domain_settings)
    return Caller(
        user_id=owner.user_id,
        user_name=owner.user_name,
        domain_id=owner.domain_id,
        domain_name=owner.domain_name,
        role=owner.role.value,
        is_platform_admin=owner.is_platform_admin,
        users_manage_own_apps=settings.users_manage_own_apps,
        token_id=token_id,
        scopes=owner.scopes,
        impersonated_by=impersonated_by,
        allow_impersonation=settings.allow_impersonation,
        session_id=session_id,
        source_token_id=owner.token_id,
        expires_at=owner.expires_at,
        source_kind=source_kind,
        root_expires_at=root_expires_at,
        root_source=root_source or source_kind,
    )


def session_caller(request: Request, session: Session, settings: Settings, cookie: str) -> Caller:
    """Authenticate the console cookie ``cookie``; a state-changing request must pass the CSRF checks."""
    owner = sessions.authenticate_session(session, cookie, kind=sessions.CONSOLE)
    if request.method not in SAFE_METHODS:
        check_same_origin(request.headers, settings)
        check_csrf(settings, owner.secret_hash, request.headers.get(CSRF_HEADER))
    return caller_of_session(owner)


Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def authenticate(
    request: Request, session: Session, settings: Settings, credentials: Credentials, read_only: bool = False
) -> Caller:
    """The request's caller, authenticated once per request (cached on ``request.state``) and
    looked up in the database at most once per token every ``token_cache_seconds``. A valid token
    is always accepted; a bad one counts against its address, and past
    ``rate_limit_token_failures`` in a window the address's bad tokens answer 429 instead of 401
    until the window ends (a whole team behind one NAT address keeps working while a guesser
    there is throttled)."""
    cached: Caller | None = getattr(request.state, "caller", None)
    if cached is not None:
        return cached
    if credentials is None or not credentials.credentials:
        cookie = request.cookies.get(CONSOLE_COOKIE)
        if cookie:
            request.state.caller = session_caller(request, session, settings, cookie)
            return request.state.caller
        raise Unauthorized("Missing credentials: send `Authorization: Bearer <token>`, or sign in")
    secret, address = credentials.credentials, client_address(request)
    limits: RateLimits = services(request).rate_limits

    def load() -> tuple[Caller, datetime | None]:
        try:
            owner = _owner(session, secret, settings, read_only)
        except Unauthorized:
            limits.hit(TOKEN_FAILURES, address)
            raise
        return caller_of(owner), owner.expires_at

    caller: Caller = services(request).token_cache.lookup(secret, load)
    if caller.source_kind == sessions.ACCESS_KEY:  # cached by a SigV4 request: still no bearer token
        limits.hit(TOKEN_FAILURES, address)
        raise Unauthorized("That is an access key's secret: it signs SigV4 requests; use an API token")
    request.state.caller = caller
    return caller


async def get_caller(request: Request, credentials: Credentials) -> Caller:
    settings = services(request).settings
    return await run_step(
        request, lambda session, read_only: authenticate(request, session, settings, credentials, read_only)
    )


CallerDep = Annotated[Caller, Depends(get_caller)]


__all__ = [
    "CallerDep",
    "Credentials",
    "authenticate",
    "caller_from_token",
    "caller_of",
    "caller_of_session",
    "lineage",
    "session_caller",
]
