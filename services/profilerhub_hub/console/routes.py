"""The console's browser routes: sign-in and sign-out, presigned links, the page shell, its assets.

    GET  /                       -> /console/
    GET  /console/               the console (signed in) or -> /console/sign-in
    GET  /console/sign-in        the sign-in page: paste an API token, or "Sign in with <provider>"
    GET  /console/oidc/sign-in   OpenID Connect: off to the provider (console/oidc.py)
    GET  /console/oidc/callback  OpenID Connect: back from the provider, into a session
    POST /console/sign-in        start a console session from a token, or a name and password
                                 (form; login-CSRF checked)
    GET  /console/invitation     an invitation: choose a password (console/invitations.py)
    POST /console/sign-out       end this browser's session (form; CSRF checked)
    GET  /console/presigned      redeem a presigned sign-in link (once), land on the console or app
    GET  /console/static/...     the console's CSS and ES modules, vendored Swagger UI
    GET  /api/v1/docs            the API's reference (Swagger UI, offline)

Everything else the console shows it fetches from the same ``/api/v1`` a script uses, with the
session cookie and ``X-CSRF-Token``: there is no private API behind the pages.
"""

from __future__ import annotations

import contextlib
import html
from pathlib import Path
from urllib.parse import quote

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from profilerhub_core.db.models import App, AppStatus, AppType, BrowserSession, UserProfile, utcnow
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import AccessDenied, InvalidInput, NotFound, Throttled, Unauthorized
from profilerhub_core.records import audit, domains, sessions, tokens, users
from profilerhub_core.settings import Settings
from profilerhub_core.web import SHARED_WEB
from profilerhub_hub.audit import record_impersonated_opening
from profilerhub_hub.browser import (
    APP_COOKIE,
    CONSOLE_COOKIE,
    SIGNIN_COOKIE,
    check_csrf,
    check_same_origin,
    cookie_options,
    csrf_token,
    signin_token,
)
from profilerhub_hub.console import invitations
from profilerhub_hub.console.forms import (
    error_note,
    form_page,
    keep_signin,
    page,
    read_form,
    signed_in,
    signin_form_ok,
    signin_value,
    template,
)
from profilerhub_hub.console.links import REDEEM_PATH, SignInLink, read_link
from profilerhub_hub.console.oidc import (
    CALLBACK_PATH,
    FLOW_COOKIE,
    FLOW_PATH,
    FLOW_SECONDS,
    START_PATH,
    Identity,
    OpenIDClient,
    SignInRefused,
    flow_cookie,
    new_flow,
    provider_name,
    read_flow,
)
from profilerhub_hub.deps.auth import caller_of_session
from profilerhub_hub.mount import mount_routes
from profilerhub_hub.proxy import app_login_url
from profilerhub_hub.ratelimit import PRESIGNED, SIGNIN, client_address
from profilerhub_hub.services import services
from profilerhub_hub.usecases import accounts, door_of
from profilerhub_hub.usecases import users as user_cases

STATIC = Path(__file__).parent / "static"
# A sign-in landing in an app on its own origin is handed on through a one-time app link this fresh.
APP_HANDOFF_SECONDS = 60

router = APIRouter(include_in_schema=False)


_SHELL, _DOCS, _PASSWORD_FORM = template("shell"), template("docs"), template("password-form")
_SIGNIN, _CONFIRM = form_page("sign-in", "Sign in"), form_page("confirm-sign-in", "Switch user?")


def _audit(session: Session, actor: str, action: str, target: str, domain: str | None, outcome: str,
           detail: dict[str, object] | None = None) -> None:  # fmt: skip
    audit.record_audit(session, actor=actor, action=action, target_type="BrowserSession", target=target,
                       domain=domain, outcome=outcome, detail=detail)  # fmt: skip


# -- pages --------------------------------------------------------------------------------------


@router.get("/")
async def root() -> RedirectResponse:
    return RedirectResponse("/console/", status_code=303)


@router.get("/console")
async def console_bare() -> RedirectResponse:
    return RedirectResponse("/console/", status_code=308)


@router.get("/console/")
async def console(request: Request) -> Response:
    cookie = request.cookies.get(CONSOLE_COOKIE)
    settings: Settings = services(request).settings
    if not cookie:
        return RedirectResponse("/console/sign-in", status_code=303)

    def lookup() -> sessions.SessionOwner | None:
        with services(request).sessions() as session:
            try:
                return sessions.authenticate_session(session, cookie, kind=sessions.CONSOLE)
            except Unauthorized:
                return None

    owner = await run_in_threadpool(lookup)
    if owner is None:
        response = RedirectResponse("/console/sign-in?ended=1", status_code=303)
        response.delete_cookie(CONSOLE_COOKIE, path="/")
        return response
    caller = caller_of_session(owner)
    values = {
        "csrf": csrf_token(settings, owner.secret_hash),
        "user": caller.user_name,
        "domain": caller.domain_name,
        "role": caller.role,
        "platform": "true" if caller.is_platform_admin else "false",
        "public_url": settings.public_url,
        "impersonated_by": caller.impersonated_by or "",
        "local_accounts": "true" if settings.local_accounts_enabled else "false",
    }
    return page(_SHELL.format(**{k: html.escape(v) for k, v in values.items()}))


def _signin_page(
    request: Request, message: str = "", status: int = 200, form: dict[str, str] | None = None
) -> Response:
    settings: Settings = services(request).settings
    value = signin_value(request)
    if request.query_params.get("ended") and not message:
        message = "Your session has ended. Sign in again."
    oidc = password = ""
    if services(request).oidc is not None:
        oidc = (
            f'<p><a class="button primary" id="sign-in-oidc" href="{START_PATH}">Sign in with '
            f'{html.escape(provider_name(settings))}</a></p><p class="help">or</p>'
        )
    signin = html.escape(signin_token(settings, value))
    if settings.local_accounts_enabled:
        typed = form or {}
        password = _PASSWORD_FORM.format(
            signin=signin,
            domain=html.escape(typed.get("domain", "")[:63]),
            user=html.escape(typed.get("user", "")[:63]),
        )
    text = _SIGNIN.format(
        signin=signin, message=error_note(message), oidc=oidc, password=password,
        token_button="" if password or oidc else "primary",
    )  # fmt: skip
    response = page(text, status)
    keep_signin(response, settings, value)
    return response


@router.get("/api/v1/docs")
async def api_docs(request: Request) -> HTMLResponse:
    """Swagger UI, served from the vendored copy (works offline, no CDN)."""
    return page(_DOCS.format(spec=html.escape(request.app.openapi_url or "/api/v1/openapi.json")))


@router.get("/console/sign-in")
async def sign_in_page(request: Request) -> Response:
    return _signin_page(request)


@router.post("/console/sign-in")
async def sign_in(request: Request) -> Response:
    """A pasted API token starts a console session with that token's scopes (and impersonation)."""
    settings: Settings = services(request).settings
    check_same_origin(request.headers, settings)
    await run_in_threadpool(services(request).rate_limits.hit, SIGNIN, client_address(request))
    form = await read_form(request)
    if not signin_form_ok(request, settings, form):
        return _signin_page(request, "The sign-in form expired; try again.", 403)
    if form.get("method") == "password":
        return await _password_sign_in(request, form)
    secret = form.get("token", "").strip()
    if not secret:
        return _signin_page(request, "Paste an API token to sign in.", 400)

    def start() -> tuple[str, int] | None:
        with services(request).sessions() as session:
            try:
                owner = tokens.authenticate(session, secret, touch_seconds=settings.token_touch_seconds)
            except Unauthorized as exc:
                _audit(session, "anonymous", "SignIn", "token", None, audit.DENIED, {"reason": str(exc)})
                session.commit()
                return None
            row, cookie = sessions.start_session(
                session, owner.user_id, kind=sessions.CONSOLE, via="token",
                seconds=int(settings.console_session_hours * 3600), scopes=owner.scopes,
                source=sessions.Source(sessions.TOKEN, owner.token_id), impersonated_by=owner.created_by,
            )  # fmt: skip
            actor = f"{owner.domain_name}/{owner.user_name}"
            _audit(session, actor, "SignIn", actor, owner.domain_name, audit.SUCCESS, {"via": "token"})
            session.commit()
            return cookie, _lifetime(row)

    started = await run_in_threadpool(start)
    if started is None:
        return _signin_page(request, "That token is not valid (unknown, revoked or expired).", 401)
    cookie, lifetime = started
    response = RedirectResponse("/console/", status_code=303)
    response.set_cookie(CONSOLE_COOKIE, cookie, max_age=lifetime, path="/", **cookie_options(settings))  # type: ignore[arg-type]
    response.delete_cookie(SIGNIN_COOKIE, path="/console/")
    return response


async def _password_sign_in(request: Request, form: dict[str, str]) -> Response:
    """The sign-in form's name and password: a console session of the user's own."""
    settings: Settings = services(request).settings
    domain, user, password, code = (
        form.get("domain", "").strip(),
        form.get("user", "").strip(),
        form.get("password", ""),
        form.get("code", "").strip()[:12],
    )
    if not (domain and user and password):
        return _signin_page(request, "Enter your domain, user name and password.", 400, form)
    address = client_address(request)

    def start() -> str:
        with services(request).sessions() as session:
            door = door_of(services(request), session, "console")
            return accounts.password_sign_in(
                door, services(request).rate_limits, domain, user, password, address, code
            )

    try:
        cookie = await run_in_threadpool(start)
    except (Unauthorized, AccessDenied, Throttled) as exc:
        status = 429 if isinstance(exc, Throttled) else 403 if isinstance(exc, AccessDenied) else 401
        return _signin_page(request, str(exc), status, form)
    return signed_in(settings, cookie, int(settings.console_session_hours * 3600))


@router.post("/console/sign-out")
async def sign_out(request: Request) -> Response:
    settings: Settings = services(request).settings
    check_same_origin(request.headers, settings)
    form = await read_form(request)
    cookie = request.cookies.get(CONSOLE_COOKIE, "")

    def end() -> None:
        with services(request).sessions() as session:
            owner = sessions.authenticate_session(session, cookie, kind=sessions.CONSOLE)
            check_csrf(settings, owner.secret_hash, form.get("csrf"))
            sessions.end_session(session, cookie)
            actor = f"{owner.domain_name}/{owner.user_name}"
            _audit(session, actor, "SignOut", actor, owner.domain_name, audit.SUCCESS)
            session.commit()

    if cookie:
        with contextlib.suppress(Unauthorized):  # already ended: signing out again is a no-op
            await run_in_threadpool(end)
    response = RedirectResponse("/console/sign-in", status_code=303)
    response.delete_cookie(CONSOLE_COOKIE, path="/")
    return response


# -- OpenID Connect -----------------------------------------------------------------------------


def _oidc(request: Request) -> OpenIDClient:
    client: OpenIDClient | None = services(request).oidc
    if client is None:
        raise NotFound("OpenID Connect sign-in is not configured on this hub (PROFILERHUB_OIDC_ISSUER)")
    return client


@router.get(START_PATH)
async def oidc_sign_in(request: Request) -> Response:
    """Send the browser to the provider, remembering the flow's secrets in a signed cookie."""
    settings: Settings = services(request).settings
    client, flow = _oidc(request), new_flow()
    try:
        url = await run_in_threadpool(client.authorization_url, flow)
    except SignInRefused as exc:
        return _signin_page(request, str(exc), 503)
    response = RedirectResponse(url, status_code=303)
    response.set_cookie(FLOW_COOKIE, flow_cookie(settings, flow), max_age=FLOW_SECONDS, path=FLOW_PATH,
                        **cookie_options(settings))  # type: ignore[arg-type]  # fmt: skip
    return response


@router.get(CALLBACK_PATH)
async def oidc_callback(request: Request) -> Response:
    """The provider's redirect: verify it (oidc.py's checks), then start a console session."""
    settings: Settings = services(request).settings
    client = _oidc(request)
    await run_in_threadpool(services(request).rate_limits.hit, SIGNIN, client_address(request))
    query = {k: v for k, v in request.query_params.items() if k in _OIDC_QUERY and len(v) <= 4000}
    flow_value = request.cookies.get(FLOW_COOKIE)

    def refuse(exc: SignInRefused, target: str = "oidc", domain: str | None = None) -> SignInRefused:
        with services(request).sessions() as session:
            _audit(session, "anonymous", "SignIn", target, domain, audit.DENIED,
                   {"via": "oidc", "reason": exc.reason})  # fmt: skip
            session.commit()
        return exc

    def start() -> str:
        try:
            flow = read_flow(settings, flow_value)
            who = client.identity(client.finish(flow, query))
        except SignInRefused as exc:
            raise refuse(exc) from None
        with services(request).sessions() as session:
            actor = f"{who.domain_name}/{who.user_name}"
            user = _oidc_user(request, session, who)
            if user is None:
                raise refuse(SignInRefused(
                    f"There is no user {who.user_name!r} in domain {who.domain_name!r} here; ask an "
                    "administrator of the domain to create it", "unknown user", 403,
                ), actor, who.domain_name)  # fmt: skip
            _, cookie = sessions.start_session(
                session, user.id, kind=sessions.CONSOLE, via="oidc",
                seconds=int(settings.console_session_hours * 3600), source=sessions.Source(sessions.OIDC),
            )  # fmt: skip
            _audit(session, actor, "SignIn", actor, who.domain_name, audit.SUCCESS,
                   {"via": "oidc", "issuer": settings.oidc_issuer, "subject": who.subject})  # fmt: skip
            session.commit()
            return cookie

    try:
        cookie = await run_in_threadpool(start)
    except SignInRefused as exc:
        response = _signin_page(request, str(exc), exc.status)
    else:
        response = RedirectResponse("/console/", status_code=303)
        lifetime = int(settings.console_session_hours * 3600)
        response.set_cookie(CONSOLE_COOKIE, cookie, max_age=lifetime, path="/", **cookie_options(settings))  # type: ignore[arg-type]
    response.delete_cookie(FLOW_COOKIE, path=FLOW_PATH)  # a flow is finished once, either way
    return response


_OIDC_QUERY = frozenset({"code", "state", "error", "error_description", "iss", "session_state"})


def _oidc_user(request: Request, session: Session, who: Identity) -> UserProfile | None:
    """The profile ``who`` signs in as; made now if their domain creates users on first sign-in."""
    domain = domains.get_domain(session, who.domain_name)
    if domain is None:
        return None
    user = users.get_user(session, domain, who.user_name)
    if user is None and DomainSettings.of(domain.settings).create_users_on_sign_in:
        door = door_of(services(request), session, "console")
        user = user_cases.create_on_first_sign_in(door, domain, who.user_name, "oidc")
    return user


# -- presigned links ----------------------------------------------------------------------------


@router.get(REDEEM_PATH)
async def redeem(request: Request, token: str = "") -> Response:
    """Redeem a presigned sign-in link once: a console session (and, landing ``app``, the app's).

    Login CSRF: a page elsewhere can send a signed-in browser to someone else's link. A browser
    whose live console session is another user's is asked first (a form POSTed from the hub's own
    page, with the sign-in form's login-CSRF value); it is never switched silently."""
    settings: Settings = services(request).settings
    if len(token) > 4000:
        raise InvalidInput("This sign-in link is not valid")
    await run_in_threadpool(services(request).rate_limits.hit, PRESIGNED, client_address(request))
    cookie = request.cookies.get(CONSOLE_COOKIE)

    def switching() -> tuple[str, str] | None:
        """(signed in as, the link's user) when the link would replace another user's session."""
        link = read_link(settings, token)
        with services(request).sessions() as session:
            try:
                current = sessions.authenticate_session(session, cookie or "", kind=sessions.CONSOLE)
            except Unauthorized:
                return None
            user = session.get(UserProfile, link.user_id)
            if user is None or user.id == current.user_id:
                return None
            return f"{current.domain_name}/{current.user_name}", f"{user.domain.name}/{user.name}"

    try:
        switch = await run_in_threadpool(switching) if cookie else None
    except Unauthorized as exc:
        return _signin_page(request, str(exc), 401)
    if switch is not None:
        return _confirm_page(request, token, *switch)
    return await _redeem(request, token)


@router.post(REDEEM_PATH)
async def redeem_confirmed(request: Request) -> Response:
    """The switch-user page's answer: redeem the link it carries (same origin, login-CSRF checked)."""
    settings: Settings = services(request).settings
    check_same_origin(request.headers, settings)
    await run_in_threadpool(services(request).rate_limits.hit, PRESIGNED, client_address(request))
    form = await read_form(request)
    if not signin_form_ok(request, settings, form):
        return _signin_page(request, "The page expired; open the sign-in link again.", 403)
    token = form.get("token", "")
    if len(token) > 4000:
        raise InvalidInput("This sign-in link is not valid")
    return await _redeem(request, token)


def _confirm_page(request: Request, token: str, current: str, user: str) -> Response:
    settings: Settings = services(request).settings
    value = signin_value(request)
    values = {"current": current, "user": user, "token": token, "signin": signin_token(settings, value)}
    response = page(_CONFIRM.format(**{k: html.escape(v) for k, v in values.items()}))
    keep_signin(response, settings, value)
    return response


async def _redeem(request: Request, token: str) -> Response:
    settings: Settings = services(request).settings

    def start() -> tuple[str, str | None, str | None, str, int]:
        link = read_link(settings, token)
        with services(request).sessions() as session:
            try:  # refused when its source is not live (user deleted, token revoked, signed out...)
                row, cookie = sessions.start_session(
                    session, link.user_id, kind=sessions.CONSOLE, via="presigned",
                    seconds=link.session_seconds, scopes=link.scopes, source=link.source,
                    impersonated_by=link.impersonated_by, nonce=link.nonce,
                )  # fmt: skip
            except sessions.LinkAlreadyUsed:
                reason: dict[str, object] = {"reason": "link already used"}
                _audit(session, "anonymous", "SignIn", link.user_id, None, audit.DENIED, reason)
                session.commit()
                raise
            owner = sessions.authenticate_session(session, cookie, kind=sessions.CONSOLE)
            actor = f"{owner.domain_name}/{owner.user_name}"
            detail: dict[str, object] = {"via": "presigned", "landing": link.landing}
            if link.impersonated_by:
                detail["impersonated_by"] = link.impersonated_by
            app_id = app_cookie = None
            target = "/console/"
            if link.landing == "app":
                app_id, app_cookie, target = _open_app(session, settings, owner, link, detail)
            _audit(session, actor, "SignIn", actor, owner.domain_name, audit.SUCCESS, detail)
            session.commit()
            return cookie, app_id, app_cookie, target, _lifetime(row)

    try:
        cookie, app_id, app_cookie, target, lifetime = await run_in_threadpool(start)
    except (Unauthorized, AccessDenied, NotFound) as exc:
        return _signin_page(request, str(exc), 403 if isinstance(exc, AccessDenied) else 401)
    response = RedirectResponse(target, status_code=303)
    options = cookie_options(settings)
    response.set_cookie(CONSOLE_COOKIE, cookie, max_age=lifetime, path="/", **options)  # type: ignore[arg-type]
    if app_id and app_cookie:
        response.set_cookie(APP_COOKIE, app_cookie, max_age=lifetime, path=f"/apps/{app_id}/", **options)  # type: ignore[arg-type]
    return response


def _open_app(
    session: Session,
    settings: Settings,
    owner: sessions.SessionOwner,
    link: SignInLink,
    detail: dict[str, object],
) -> tuple[str, str | None, str]:
    """The user's live profiler app, an app session for it (impersonation only where allowed) and
    where to send the browser. An app on an origin of its own sets its cookie there: the browser
    goes through a one-time app link instead (``app_hosts``)."""
    by = link.impersonated_by
    if by and not DomainSettings.of(owner.domain_settings).allow_impersonation:
        raise AccessDenied(
            f"This link was made by {by}; your domain does not allow opening apps by impersonation. "
            "Sign in and open your profiler yourself."
        )
    app = session.scalar(
        sa.select(App).where(
            App.user_id == owner.user_id, App.app_type == AppType.DetailedProfiler, App.app_name == "default",
            App.status != AppStatus.Deleted,
        )
    )  # fmt: skip
    if app is None:
        raise NotFound("You have no profiler app yet: start one from the console")
    seconds = max(1, int((owner.expires_at - utcnow()).total_seconds()))
    detail["app_id"] = app.id
    if by:
        record_impersonated_opening(session, by, f"{owner.domain_name}/{owner.user_name}", app.id, "console")
    if settings.app_subdomain_host:
        url = app_login_url(
            settings, app.id, owner.user_id, APP_HANDOFF_SECONDS, session_seconds=seconds,
            source=owner.lineage, impersonated_by=by, scopes=owner.scopes,
        )  # fmt: skip
        return app.id, None, url
    _, app_cookie = sessions.start_session(
        session, owner.user_id, kind=sessions.APP, via="presigned", app_id=app.id, seconds=seconds,
        scopes=owner.scopes, source=owner.lineage, impersonated_by=by,
    )  # fmt: skip
    return app.id, app_cookie, f"/apps/{quote(app.id)}/"


def _lifetime(row: BrowserSession) -> int:
    """A new session's cookie lifetime: what is left of the session (capped by its source)."""
    return max(1, int((row.expires_at - utcnow()).total_seconds()))


def install_console(app: object) -> None:
    """Mount the console's routes and assets (``create_app`` calls this)."""
    from fastapi import FastAPI
    from starlette.staticfiles import StaticFiles

    assert isinstance(app, FastAPI)
    mount_routes(app, router)
    mount_routes(app, invitations.router)
    app.mount("/console/static/base", StaticFiles(directory=SHARED_WEB), name="console-static-base")
    app.mount("/console/static", StaticFiles(directory=STATIC), name="console-static")


__all__ = ["install_console", "router"]
