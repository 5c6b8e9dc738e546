"""What the console's server-rendered forms share: reading a posted form, the login-CSRF value a
sign-in form carries (tied to the ``profilerhub_signin`` cookie), the templates (the sign-in pages
in one frame: ``form_page``), and the console session cookie a sign-in sets.
"""

from __future__ import annotations

import html
import secrets
from pathlib import Path
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from profilerhub_core.errors import InvalidInput
from profilerhub_core.settings import Settings
from profilerhub_hub.browser import CONSOLE_COOKIE, SIGNIN_COOKIE, cookie_options, signin_token

TEMPLATES = Path(__file__).parent / "templates"
MAX_FORM_BYTES = 16 * 1024


def template(name: str) -> str:
    return (TEMPLATES / f"{name}.html").read_text()


def form_page(name: str, title: str) -> str:
    """The sign-in pages' frame (``form-page.html``: head, top bar) titled ``title`` around the
    template ``name`` (what the page's ``<main>`` holds); ``str.format`` fills it in as before."""
    return template("form-page").replace("{title}", title).replace("{main}", template(name).rstrip("\n"))


async def read_form(request: Request) -> dict[str, str]:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise InvalidInput("Form too large")
    return {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}


def signin_value(request: Request) -> str:
    """This browser's ``profilerhub_signin`` cookie value, or a new one (set it with ``keep_signin``)."""
    return request.cookies.get(SIGNIN_COOKIE) or secrets.token_urlsafe(24)


def keep_signin(response: Response, settings: Settings, value: str) -> None:
    response.set_cookie(SIGNIN_COOKIE, value, max_age=3600, path="/console/", **cookie_options(settings))  # type: ignore[arg-type]


def signin_form_ok(request: Request, settings: Settings, form: dict[str, str]) -> bool:
    """Whether the form repeats the value tied to this browser's sign-in cookie (login CSRF)."""
    value = request.cookies.get(SIGNIN_COOKIE, "")
    return bool(value) and secrets.compare_digest(form.get("signin", ""), signin_token(settings, value))


def error_note(message: str) -> str:
    return f'<p class="error" role="alert">{html.escape(message)}</p>' if message else ""


def signed_in(settings: Settings, cookie: str, lifetime: int, to: str = "/console/") -> Response:
    """The answer that lands a browser, signed in with the console session ``cookie``, on ``to``."""
    response = RedirectResponse(to, status_code=303)
    response.set_cookie(CONSOLE_COOKIE, cookie, max_age=lifetime, path="/", **cookie_options(settings))  # type: ignore[arg-type]
    response.delete_cookie(SIGNIN_COOKIE, path="/console/")
    return response


def page(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status)


__all__ = [
    "MAX_FORM_BYTES",
    "TEMPLATES",
    "error_note",
    "form_page",
    "keep_signin",
    "page",
    "read_form",
    "signed_in",
    "signin_form_ok",
    "signin_value",
    "template",
]
