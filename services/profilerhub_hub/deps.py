"""FastAPI dependencies, declared once as ``Annotated`` aliases and used as parameter types.

    SettingsDep   the process's Settings (passed to create_app)
    SessionDep    a database Session for this request; the route commits once
    CallerDep     the authenticated Caller (401 without a valid bearer token)
    PageDep       ``limit`` and ``next_token`` query parameters of a list route

A route declares the action it performs, and gets the resolved target back:

    @router.get("/domains/{domain}/users/{user}")
    def describe_user(target: Annotated[Resolved, allow(Action.DescribeUserProfile)]) -> UserRead:
        return UserRead.of(target.user)

``allow`` looks up the ``{domain}`` and ``{user}`` path parameters (404 when missing, or hidden
from this caller) and asks ``permissions.authorize``; a refused change is written to the audit log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import sqlalchemy as sa
from fastapi import Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import InstrumentedAttribute, Session
from starlette.types import ASGIApp, Receive, Scope, Send

from profilerhub_core.db.models import Domain, UserProfile
from profilerhub_core.db.session import WriteRequired
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import AccessDenied, InvalidInput, Unauthorized
from profilerhub_core.names import is_valid_name
from profilerhub_core.pagination import paginate
from profilerhub_core.records import audit, domains, tokens, users
from profilerhub_core.settings import Settings
from profilerhub_hub.permissions import MUTATING, Action, Caller, Target, authorize, check_domain_visible
from profilerhub_hub.schemas import Page

T = TypeVar("T")


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


def request_session(request: Request) -> Session:
    """The request's one Session, made on first use; ``SessionCloser`` closes it after the response.

    (A plain function rather than a ``yield`` dependency: this runs on every request, and exit
    stacks are the most expensive part of FastAPI's dependency solving.)
    """
    session: Session | None = request.scope.get("profilerhub.session")
    if session is None:
        session = request.scope["profilerhub.session"] = request.app.state.sessions()
    return session


async def get_session(request: Request) -> Session:
    return request_session(request)


class SessionCloser:
    """ASGI middleware closing the request's Session (if one was made) once the response is done."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        finally:
            session = scope.get("profilerhub.session")
            if session is not None:
                session.close()


SessionDep = Annotated[Session, Depends(get_session)]

_bearer = HTTPBearer(auto_error=False, description="An API token: `Authorization: Bearer <token>`")


def caller_from_token(
    session: Session, secret: str, settings: Settings, *, read_only: bool = False
) -> Caller:
    """Authenticate ``secret`` (raises ``Unauthorized``); also used by the app proxy."""
    return _caller_of(_owner(session, secret, settings, read_only))


def _owner(session: Session, secret: str, settings: Settings, read_only: bool) -> tokens.TokenOwner:
    return tokens.authenticate(
        session, secret, touch_seconds=settings.token_touch_seconds, read_only=read_only
    )


def _caller_of(owner: tokens.TokenOwner) -> Caller:
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


def _caller(
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
        caller = _caller_of(owner)
        cache.put(secret, caller, owner.expires_at)
    request.state.caller = caller
    return caller


@contextmanager
def request_step(session: Session) -> Iterator[None]:
    """End the transaction after one step of a request: commit on success, roll back on error.

    Each sync dependency and the route run in separate thread-pool calls. A connection held while
    waiting for the next thread could starve the pool and deadlock under load, so every step gives
    its connection back. Loaded objects stay usable (``expire_on_commit=False``).
    """
    try:
        yield
    except BaseException:
        session.rollback()
        raise
    if session.in_transaction():
        session.commit()


async def run_step(request: Request, step: Callable[[Session, bool], T]) -> T:
    """Run ``step(session, read_only)`` as one step of the request (see ``request_step``).

    Where reads are local (SQLite, ``app.state.inline_reads``) the step runs read-only on the event
    loop: a few indexed reads cost less than the hop to a thread-pool thread and back. A step that
    must write (a token's ``last_used_at``, a refusal's audit record) raises ``WriteRequired``,
    is rolled back, and runs again in the thread pool, where waiting for the database's write
    lock blocks only that thread.
    """
    session = request_session(request)
    if request.app.state.inline_reads:
        try:
            with request_step(session):
                return step(session, True)
        except WriteRequired:
            pass

    def in_thread() -> T:
        with request_step(session):
            return step(session, False)

    return await run_in_threadpool(in_thread)


async def get_caller(request: Request, credentials: Credentials) -> Caller:
    settings = request.app.state.settings
    return await run_step(
        request, lambda session, read_only: _caller(request, session, settings, credentials, read_only)
    )


CallerDep = Annotated[Caller, Depends(get_caller)]


@dataclass(frozen=True, slots=True)
class Resolved:
    """The target of a request, looked up from its path and authorized for the caller."""

    caller: Caller
    target: Target
    domain: Domain | None = None
    user: UserProfile | None = None

    @property
    def name(self) -> str:
        """How the audit log names the target (``domain/user`` or ``domain``)."""
        if self.user is not None and self.domain is not None:
            return f"{self.domain.name}/{self.user.name}"
        return self.domain.name if self.domain is not None else "*"


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
            check_domain_visible(caller, user.domain_id, domain_missing)
            user_missing = users.user_not_found(name, user.name)
            target = Target(domain_id=user.domain_id, owner_id=user.id, not_found=user_missing)
            return Resolved(caller, target, user.domain, user)
    domain = domains.get_domain(session, name) if is_valid_name(name) else None
    if domain is None:
        raise domain_missing
    check_domain_visible(caller, domain.id, domain_missing)
    if "user" not in path:
        return Resolved(caller, Target(domain_id=domain.id, not_found=domain_missing), domain)
    raise users.user_not_found(domain.name, path["user"])


def allow(action: Action) -> Any:
    """A dependency that authorizes ``action`` on the request's target and returns ``Resolved``."""

    async def dependency(request: Request, credentials: Credentials) -> Resolved:
        settings = request.app.state.settings

        def step(session: Session, read_only: bool) -> Resolved:
            caller = _caller(request, session, settings, credentials, read_only)
            return _authorized(request, session, caller, read_only)

        return await run_step(request, step)

    def _authorized(request: Request, session: Session, caller: Caller, read_only: bool) -> Resolved:
        resolved = resolve(session, caller, request.path_params)
        try:
            authorize(caller, action, resolved.target)
        except AccessDenied as denied:
            if action in MUTATING:
                if read_only:
                    raise WriteRequired("a refusal is audited") from denied
                audit.record_audit(
                    session,
                    actor=caller.actor,
                    action=action.value,
                    target_type=_target_type(resolved),
                    target=resolved.name,
                    domain=resolved.domain.name if resolved.domain else None,
                    outcome=audit.DENIED,
                    detail={"reason": denied.message},
                )
                session.commit()
            raise
        return resolved

    dependency.__name__ = f"allow_{action.value}"
    return Depends(dependency)


def _target_type(resolved: Resolved) -> str:
    if resolved.user is not None:
        return "UserProfile"
    return "Domain" if resolved.domain is not None else "Hub"


@dataclass(frozen=True, slots=True)
class PageParams:
    """``limit`` and ``next_token`` of a list request, and the key that signs page tokens."""

    limit: int
    next_token: str | None
    key: bytes

    def fetch(
        self,
        session: Session,
        stmt: sa.Select[Any],
        order: Sequence[InstrumentedAttribute[Any]],
        read: Callable[[Any], T],
        *,
        scope: str,
        descending: bool = False,
    ) -> Page[T]:
        """One page of ``stmt`` ordered by ``order``, each row turned into a schema by ``read``."""
        result = paginate(
            session,
            stmt,
            order,
            limit=self.limit,
            next_token=self.next_token,
            key=self.key,
            scope=scope,
            descending=descending,
        )
        return Page[T](items=[read(row) for row in result.items], next_token=result.next_token)


async def get_page(
    settings: SettingsDep,
    limit: Annotated[
        int | None, Query(ge=1, description="Items per page (default and maximum in settings).")
    ] = None,
    next_token: Annotated[str | None, Query(max_length=2000, description="From the previous page.")] = None,
) -> PageParams:
    if limit is not None and limit > settings.max_page_size:
        raise InvalidInput(f"limit must be at most {settings.max_page_size}")
    return PageParams(limit or settings.default_page_size, next_token or None, settings.signing_key())


PageDep = Annotated[PageParams, Depends(get_page)]


__all__ = [
    "CallerDep",
    "PageDep",
    "PageParams",
    "Resolved",
    "SessionDep",
    "SettingsDep",
    "allow",
    "caller_from_token",
    "resolve",
]
