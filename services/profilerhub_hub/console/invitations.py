"""The invitation page: an invited user chooses a password and lands in the console, signed in.

    GET  /console/invitation?token=phi_…   the form (or why the link cannot be used)
    POST /console/invitation               set the password (login-CSRF and same origin checked)

The operation is ``profilerhub_hub.usecases.accounts.accept_invitation``; a refused password leaves the
invitation open and shows the form again with the reason.
"""

from __future__ import annotations

import html

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from profilerhub_core.errors import AccessDenied, InvalidInput, Unauthorized
from profilerhub_core.records import accounts as account_records
from profilerhub_core.settings import Settings
from profilerhub_hub.browser import check_same_origin, signin_token
from profilerhub_hub.console.forms import (
    error_note,
    form_page,
    keep_signin,
    page,
    read_form,
    signed_in,
    signin_form_ok,
    signin_value,
)
from profilerhub_hub.ratelimit import PRESIGNED, client_address
from profilerhub_hub.services import services
from profilerhub_hub.usecases import accounts, door_of

router = APIRouter(include_in_schema=False)
_INVITATION = form_page("invitation", "Choose your password")
_REFUSED = form_page("invitation-refused", "Invitation")


def _refused(message: str, status: int) -> Response:
    """The invitation cannot be used: say why, on a page with no form."""
    return page(_REFUSED.format(message=error_note(message)), status)


def _form_page(request: Request, secret: str, message: str = "", status: int = 200) -> Response:
    settings: Settings = services(request).settings

    def look() -> tuple[str, str, str, str]:
        with services(request).sessions() as session:
            row, user = account_records.open_invitation(session, secret)
            return user.name, user.domain.name, row.created_by, f"{row.expires_at:%Y-%m-%d %H:%M} UTC"

    try:
        accounts.require_local_accounts(settings)
        return _render(request, settings, secret, message, status, look())
    except (Unauthorized, AccessDenied) as exc:
        return _refused(str(exc), 403 if isinstance(exc, AccessDenied) else 401)


def _render(
    request: Request,
    settings: Settings,
    secret: str,
    message: str,
    status: int,
    facts: tuple[str, str, str, str],
) -> Response:
    value = signin_value(request)
    user, domain, by, expires = (html.escape(v) for v in facts)
    text = _INVITATION.format(
        user=user, domain=domain, invited_by=by, expires=expires, message=error_note(message),
        min_length=settings.password_min_length, signin=html.escape(signin_token(settings, value)),
        token=html.escape(secret),
    )  # fmt: skip
    response = page(text, status)
    keep_signin(response, settings, value)
    return response


@router.get(accounts.INVITATION_PATH)
async def invitation_page(request: Request, token: str = "") -> Response:
    await run_in_threadpool(services(request).rate_limits.hit, PRESIGNED, client_address(request))
    if not token or len(token) > 200:
        return _refused("This invitation link is not valid; ask your administrator for a new one", 401)
    return await run_in_threadpool(_form_page, request, token)


@router.post(accounts.INVITATION_PATH)
async def accept(request: Request) -> Response:
    settings: Settings = services(request).settings
    check_same_origin(request.headers, settings)
    await run_in_threadpool(services(request).rate_limits.hit, PRESIGNED, client_address(request))
    form = await read_form(request)
    secret = form.get("token", "")[:200]
    if not signin_form_ok(request, settings, form):
        return await run_in_threadpool(_form_page, request, secret, "The form expired; try again.", 403)
    password = form.get("password", "")
    if password != form.get("again", password):
        return await run_in_threadpool(_form_page, request, secret, "The two passwords differ.", 400)

    def accept_it() -> str:
        with services(request).sessions() as session:
            return accounts.accept_invitation(
                door_of(services(request), session, "console"), secret, password
            )

    try:
        cookie = await run_in_threadpool(accept_it)
    except InvalidInput as exc:  # the password: the invitation is still open
        return await run_in_threadpool(_form_page, request, secret, str(exc), 400)
    except (Unauthorized, AccessDenied) as exc:
        return _refused(str(exc), 403 if isinstance(exc, AccessDenied) else 401)
    return signed_in(settings, cookie, int(settings.console_session_hours * 3600))


__all__ = ["router"]
