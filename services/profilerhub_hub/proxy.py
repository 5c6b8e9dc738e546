"""The reverse proxy ``/apps/{app_id}/…`` -> the app's endpoint, for the app's owner only.

Who may pass: the owner, with an API token (``Authorization: Bearer``) or with the app's
browser session cookie ``profilerhub_session`` that a one-time presigned URL sets (HttpOnly,
SameSite=Lax, scoped to the app's path; a server-side session row, so signing out, revoking the
user's tokens or deleting the user ends it at once).  Everyone else, administrators included,
gets 404; a token an administrator made for the user opens it only where the domain allows
impersonation (audited).  A cookie-carried request that changes state must come from the hub's
own origin (``Origin``/``Referer`` against ``public_url``, never the request's ``Host``).

The hub strips its own credentials and forwards a fresh hub-signed JWT (audience = app id,
subject = owner) that the app checks on every request.  Bodies stream both ways; any method
passes.  Traffic updates the app's ``last_activity_at`` at most every
``activity_write_seconds`` per app, not once per request.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass
from typing import TYPE_CHECKING, Annotated
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, StreamingResponse
from sqlalchemy.orm import Session, sessionmaker
from starlette.background import BackgroundTask

from profilerhub_core.db.models import App, AppStatus, UserProfile, utcnow
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import AccessDenied, InvalidInput, NotFound, Unauthorized, Unavailable
from profilerhub_core.outage import is_outage
from profilerhub_core.pagination import decode_page_token, encode_page_token
from profilerhub_core.records import sessions
from profilerhub_core.records.apps import record_activity
from profilerhub_core.settings import Settings
from profilerhub_hub.app_hosts import app_base_url, app_origin
from profilerhub_hub.audit import record_impersonated_opening, record_refused_opening
from profilerhub_hub.browser import (
    APP_COOKIE,
    CONSOLE_COOKIE,
    SIGNIN_COOKIE,
    check_same_origin,
    cookie_options,
)
from profilerhub_hub.deps import caller_from_token, lineage
from profilerhub_hub.mount import mount_routes
from profilerhub_hub.permissions import Action, Caller, Target, authorize, impersonator
from profilerhub_hub.ratelimit import PRESIGNED, TOKEN_FAILURES, RateLimits, client_address
from profilerhub_hub.services import HubServices

if TYPE_CHECKING:
    from joserfc.jwk import OKPKey

log = logging.getLogger("profilerhub.proxy")

SESSION_COOKIE = APP_COOKIE
_HUB_COOKIES = frozenset({APP_COOKIE, CONSOLE_COOKIE, SIGNIN_COOKIE})  # never forwarded to an app
LOGIN_PATH = "_hub/login"
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_LOGIN_SCOPE = "app-login"
# Not forwarded upstream: connection-level headers, and the hub's own credentials.
_DROP_REQUEST = frozenset(
    {
        "host",
        "authorization",
        "cookie",
        "connection",
        "keep-alive",
        "te",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
        "trailer",
    }
)
_DROP_RESPONSE = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "trailer"})


def _not_found(app_id: str) -> NotFound:
    return NotFound(f"App '{app_id}' not found")


@dataclass(frozen=True, slots=True)
class AppLink:
    """What an app's one-time sign-in link carries, signed: whose session it starts, the
    session's lifetime, scopes and impersonator, and what it descends from."""

    app_id: str
    user_id: str
    expires: int
    nonce: str
    session_seconds: int
    token_id: str | None
    impersonated_by: str | None
    scopes: list[str]
    # Lineage (``records.sessions.Source``): the root's kind, the session the link was made in,
    # when it was issued (microseconds since the epoch).
    source: str
    parent_id: str | None
    issued: int

    @property
    def lineage(self) -> sessions.Source:
        return sessions.Source(self.source, self.token_id, self.parent_id, sessions.from_micros(self.issued))


def app_login_url(
    settings: Settings,
    app_id: str,
    user_id: str,
    ttl: int,
    *,
    source: sessions.Source,
    session_seconds: int | None = None,
    impersonated_by: str | None = None,
    scopes: Sequence[str] = ("*",),
) -> str:
    """A one-time URL, valid ``ttl`` seconds, that gives a browser the app's session cookie
    (on the app's own origin where apps have one: ``app_hosts``), descending from ``source``."""
    issued = source.issued_at or utcnow()
    link = AppLink(
        app_id, user_id, int(issued.timestamp()) + ttl, secrets.token_hex(12),
        session_seconds or int(settings.app_session_hours * 3600), source.token_id, impersonated_by,
        list(scopes), source.kind, source.parent_id, sessions.micros(issued),
    )  # fmt: skip
    token = encode_page_token(settings.signing_key(), _LOGIN_SCOPE, list(astuple(link)))
    return f"{app_base_url(settings, app_id)}{LOGIN_PATH}?token={quote(token)}"


def presigned_app_url(settings: Settings, caller: Caller, app: App, ttl: int) -> str:
    """The one-time URL that opens ``app`` for ``caller`` (``OpenApp`` already authorized; the use
    case ``usecases.apps.open_app`` audits an opening by impersonation). The app session it starts
    keeps the caller's token (revoking it ends the session; a console session's: the token it
    began with) and impersonator (an administrator opening a user's app is one), and ends no later
    than the caller's credential."""
    seconds = int(settings.app_session_hours * 3600)
    if caller.expires_at is not None:
        seconds = max(1, min(seconds, int((caller.expires_at - utcnow()).total_seconds())))
    return app_login_url(
        settings, app.id, app.user_id, ttl, session_seconds=seconds, source=lineage(caller),
        impersonated_by=impersonator(caller, app.user_id), scopes=caller.scopes,
    )  # fmt: skip


def _read_link(settings: Settings, token: str) -> AppLink:
    try:
        values = decode_page_token(settings.signing_key(), _LOGIN_SCOPE, token)
    except InvalidInput:
        values = []
    try:
        link = AppLink(*values)
    except TypeError:
        link = None
    if link is None or not all(isinstance(v, int) for v in (link.expires, link.session_seconds, link.issued)):
        raise Unauthorized("This link or session is not valid; ask for a new presigned URL")
    return link


@dataclass(frozen=True, slots=True)
class Opened:
    endpoint: str
    owner_id: str
    via_cookie: bool


class AppProxy:
    """Per-hub-process proxy state: the token key, used login nonces, the activity throttle."""

    def __init__(
        self, settings: Settings, sessions: sessionmaker[Session], key: Callable[[], OKPKey]
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self._key = key
        self._written: dict[str, float] = {}
        self._impersonations: dict[str, float] = {}
        self._lock = threading.Lock()

    @property
    def key(self) -> OKPKey:
        """The app-token key (``HubServices.app_token_key``: read on the first request to an app)."""
        return self._key()

    # -- who may open -------------------------------------------------------------------------

    def open(self, app_id: str, bearer: str | None, cookie: str | None) -> Opened:
        """Check the caller may open ``app_id`` and return where it runs (database calls: thread)."""
        with self.sessions() as session:
            app = session.get(App, app_id)
            if bearer:
                caller = caller_from_token(session, bearer, self.settings)
                session.commit()  # the token's last-used time
                if app is None:
                    raise _not_found(app_id)
                as_user, allowed = caller.actor, False
                if caller.user_id != app.user_id:  # an administrator: their domain's setting decides
                    owner_row = session.get(UserProfile, app.user_id)
                    if owner_row is not None:
                        as_user = f"{owner_row.domain.name}/{owner_row.name}"
                        allowed = DomainSettings.of(owner_row.domain.settings).allow_impersonation
                target = Target(app.domain_id, app.user_id, _not_found(app_id), allowed)
                try:
                    authorize(caller, Action.OpenApp, target)
                except (AccessDenied, NotFound) as refused:
                    self._audit_refusal(session, caller, as_user, app, refused.message)
                    raise
                by = impersonator(caller, app.user_id)
                if by:
                    self._audit_impersonation(session, by, as_user, app)
            elif cookie:
                try:
                    owner = sessions.authenticate_session(session, cookie, kind=sessions.APP)
                except Unauthorized:
                    raise Unauthorized(
                        "Your session for this app is not valid or has ended: open the app again from "
                        f"the console ({self.settings.public_url}/console/) or with a new presigned URL"
                    ) from None
                if app is None or owner.app_id != app_id or app.user_id != owner.user_id:
                    raise _not_found(app_id)
            else:
                raise Unauthorized("Open the app with an API token, or from the console or a presigned URL")
            if app.status != AppStatus.InService or not app.endpoint:
                state = "restarting" if app.status == AppStatus.InService else app.status.value
                raise Unavailable(f"App is {state}; it answers once it is InService")
            return Opened(app.endpoint, app.user_id, via_cookie=not bearer)

    def _audit_impersonation(self, session: Session, by: str, as_user: str, app: App) -> None:
        """An app opened with a token someone else made: audited (once a minute per token and app)."""
        key, now = f"{by}>{as_user}>{app.id}", time.monotonic()
        with self._lock:
            if now - self._impersonations.get(key, float("-inf")) < 60:
                return
            self._impersonations[key] = now
        record_impersonated_opening(session, by, as_user, app.id, "proxy")
        session.commit()

    def _audit_refusal(self, session: Session, caller: Caller, as_user: str, app: App, reason: str) -> None:
        """A refused opening through the proxy with a token: audited, once a minute per token and
        app (a page retried asset by asset is one attempt, not a hundred rows)."""
        key, now = f"refused>{caller.token_id}>{app.id}", time.monotonic()
        with self._lock:
            if now - self._impersonations.get(key, float("-inf")) < 60:
                return
            self._impersonations[key] = now
        record_refused_opening(session, caller.actor, as_user, app.id, reason, "proxy")
        session.commit()

    def login(self, app_id: str, token: str) -> tuple[str, int]:
        """Redeem a presigned URL's token once; return the app session's cookie value and its lifetime."""
        link = _read_link(self.settings, token)
        seconds = link.session_seconds
        if link.app_id != app_id:
            raise _not_found(app_id)
        if link.expires < time.time():
            raise Unauthorized("This presigned URL has expired; ask for a new one")
        with self.sessions() as session:
            app = session.get(App, app_id)
            if app is None or app.user_id != link.user_id or app.status == AppStatus.Deleted:
                raise _not_found(app_id)
            try:
                row, value = sessions.start_session(
                    session, link.user_id, kind=sessions.APP, via="app-link", app_id=app_id,
                    seconds=seconds, nonce=f"app:{link.nonce}", source=link.lineage,
                    impersonated_by=link.impersonated_by, scopes=link.scopes,
                )  # fmt: skip
            except sessions.LinkAlreadyUsed:
                raise Unauthorized("This presigned URL was already used; ask for a new one") from None
            session.commit()
        return value, max(1, int((row.expires_at - utcnow()).total_seconds()))

    # -- activity -----------------------------------------------------------------------------

    async def note_activity(self, app_id: str) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._written.get(app_id, float("-inf")) < self.settings.activity_write_seconds:
                return
            self._written[app_id] = now
        await run_in_threadpool(self._write_activity, app_id)

    def _write_activity(self, app_id: str) -> None:
        try:
            with self.sessions() as session:
                record_activity(session, {app_id: utcnow()})
                session.commit()
        except Exception as exc:  # activity is best effort; the request already succeeded
            if not is_outage(exc):  # an outage is logged once, by the engine's events
                log.warning("could not record activity of app %s: %s", app_id, exc)


def _bearer(request: Request) -> str | None:
    scheme, _, secret = request.headers.get("authorization", "").partition(" ")
    return secret.strip() or None if scheme.lower() == "bearer" else None


def proxy_router(proxy: AppProxy, limits: RateLimits) -> APIRouter:
    """The proxy's routes, answering through ``proxy`` (one per hub process) and ``limits``."""
    router = APIRouter(include_in_schema=False)

    @router.api_route("/apps/{app_id}", methods=METHODS)
    async def app_root(app_id: str) -> RedirectResponse:
        return RedirectResponse(f"/apps/{quote(app_id)}/", status_code=308)

    @router.get(f"/apps/{{app_id}}/{LOGIN_PATH}")
    async def app_login(
        request: Request, app_id: str, token: Annotated[str, Query(max_length=2000)]
    ) -> Response:
        """Where a presigned URL lands: set the app's session cookie, then show the app."""
        await run_in_threadpool(limits.hit, PRESIGNED, client_address(request))
        value, lifetime = await run_in_threadpool(proxy.login, app_id, token)
        response = RedirectResponse(f"/apps/{quote(app_id)}/", status_code=303)
        options = cookie_options(proxy.settings)
        response.set_cookie(SESSION_COOKIE, value, max_age=lifetime, path=f"/apps/{app_id}/", **options)  # type: ignore[arg-type]
        return response

    @router.api_route("/apps/{app_id}/{path:path}", methods=METHODS)
    async def app_proxy(request: Request, app_id: str, path: str) -> Response:
        import httpx  # with the app-token key below: imported on the first proxied request, not at start

        from profilerhub_core.apptokens import issue_app_token

        bearer, address = _bearer(request), client_address(request)
        try:
            opened = await run_in_threadpool(proxy.open, app_id, bearer, request.cookies.get(SESSION_COOKIE))
        except Unauthorized:
            if bearer:  # a refused token (a cookie is not a guess at a token)
                await run_in_threadpool(limits.hit, TOKEN_FAILURES, address)
            raise
        if opened.via_cookie and request.method not in _SAFE_METHODS:
            check_same_origin(request.headers, proxy.settings, origin=app_origin(proxy.settings, app_id))
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _DROP_REQUEST]
        other_cookies = "; ".join(f"{k}={v}" for k, v in request.cookies.items() if k not in _HUB_COOKIES)
        if other_cookies:
            headers.append(("cookie", other_cookies))
        token = issue_app_token(proxy.key, app_id, opened.owner_id, ttl=proxy.settings.app_token_ttl)
        headers += [
            ("authorization", f"Bearer {token}"),
            ("x-forwarded-host", request.headers.get("host", "")),
            ("x-forwarded-proto", request.url.scheme),
            ("x-forwarded-for", request.client.host if request.client else ""),
        ]
        has_body = "content-length" in request.headers or "transfer-encoding" in request.headers
        client = httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=5.0))
        # The path as the client sent it, still percent-encoded: decoded, "%01" or "%2F" would change
        # what the app is asked for (or be no URL at all).
        raw_path = request.scope.get("raw_path") or f"/apps/{app_id}/{path}".encode()
        try:
            url = httpx.URL(
                f"{opened.endpoint}{raw_path.decode('latin-1')}", query=request.url.query.encode()
            )
        except httpx.InvalidURL as exc:
            await client.aclose()
            raise InvalidInput(f"The path of this request is not a valid URL path ({exc})") from exc
        upstream_request = client.build_request(
            request.method, url, headers=headers, content=request.stream() if has_body else None
        )
        try:
            upstream = await client.send(upstream_request, stream=True)
        except httpx.HTTPError as exc:
            await client.aclose()
            raise Unavailable("The app is not answering; if it stopped, it is marked Failed shortly") from exc
        await proxy.note_activity(app_id)

        async def close() -> None:
            await upstream.aclose()
            await client.aclose()

        response = StreamingResponse(
            upstream.aiter_raw(), status_code=upstream.status_code, background=BackgroundTask(close)
        )
        response.raw_headers = [  # every header as sent, repeated ones (Set-Cookie) included
            (k.encode("latin-1"), v.encode("latin-1"))
            for k, v in upstream.headers.multi_items()
            if k.lower() not in _DROP_RESPONSE
        ]
        return response

    return router


def install_app_proxy(app: FastAPI, services: HubServices) -> None:
    """Mount the proxy, with its per-process :class:`AppProxy` (``create_app`` calls this)."""
    proxy = AppProxy(services.settings, services.sessions, lambda: services.app_token_key)
    mount_routes(app, proxy_router(proxy, services.rate_limits))


__all__ = [
    "SESSION_COOKIE",
    "AppProxy",
    "app_login_url",
    "install_app_proxy",
    "presigned_app_url",
    "proxy_router",
]
