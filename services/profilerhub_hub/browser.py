"""What keeps a browser safe on the hub: session cookies, CSRF checks and security headers.

Cookies (all HttpOnly, SameSite=Lax, ``Secure`` when ``public_url`` is https):

    profilerhub_console    the console's session, path ``/``; never forwarded to an app
    profilerhub_session    one app's session, path ``/apps/{app_id}/`` (set by the app's sign-in link)
    profilerhub_signin     a random value the sign-in form repeats (login CSRF), path ``/console/``

CSRF: a request that changes state with a cookie (not a bearer token) must (1) come from the
hub's own origin, judged from ``Origin`` (or ``Referer``) against ``public_url``'s origin, never
against the request's ``Host`` (which an attacker's DNS can choose), and (2) carry the session's
CSRF token (``X-CSRF-Token`` header, or a ``csrf`` form field): an HMAC of the session's secret
hash under the hub's key, given to the console's pages in ``<meta name="csrf-token">``.

Headers on every answer (``SecurityHeaders``): a Content-Security-Policy without inline scripts
and with ``frame-ancestors 'none'`` (unless the answer set its own: a proxied app's), nosniff,
Referrer-Policy, X-Frame-Options DENY; and ``Cache-Control: no-store`` on API and console answers
that did not say otherwise (token secrets and session pages must never sit in a cache).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from profilerhub_core.errors import AccessDenied
from profilerhub_core.settings import Settings

CONSOLE_COOKIE = "profilerhub_console"
APP_COOKIE = "profilerhub_session"
SIGNIN_COOKIE = "profilerhub_signin"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# Swagger UI sets style attributes from its scripts; its page alone allows inline styles.
DOCS_CSP = CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
]
DOCS_PATH = "/api/v1/docs"
_NO_STORE_PREFIXES = ("/api/", "/console")


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def check_same_origin(headers: Mapping[str, str], settings: Settings, origin: str | None = None) -> None:
    """Refuse (``AccessDenied``) a request whose ``Origin``/``Referer`` is not ``origin`` (default:
    ``public_url``'s; an app on a host of its own passes its own, ``app_hosts.app_origin``)."""
    source = headers.get("origin") or headers.get("referer")
    expected = origin_of(origin or settings.public_url)
    if not source or source == "null" or origin_of(source) != expected:
        raise AccessDenied(
            "Cross-site request refused: state-changing requests must come from the hub's own pages"
        )


def csrf_token(settings: Settings, secret_hash: str) -> str:
    """The CSRF token of the session whose secret hashes to ``secret_hash``."""
    return hmac.new(settings.signing_key(), b"csrf:" + secret_hash.encode(), hashlib.sha256).hexdigest()


def check_csrf(settings: Settings, secret_hash: str, given: str | None) -> None:
    if not given or not hmac.compare_digest(given, csrf_token(settings, secret_hash)):
        raise AccessDenied("Missing or wrong CSRF token: reload the page and try again")


def signin_token(settings: Settings, value: str) -> str:
    """What the sign-in form must repeat for the ``profilerhub_signin`` cookie ``value``."""
    return hmac.new(settings.signing_key(), b"signin:" + value.encode(), hashlib.sha256).hexdigest()


def cookie_options(settings: Settings) -> dict[str, object]:
    return {"httponly": True, "samesite": "lax", "secure": settings.public_url.startswith("https://")}


class SecurityHeaders:
    """ASGI middleware adding the headers above to every HTTP answer of the hub."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        no_store = path.startswith(_NO_STORE_PREFIXES)
        csp = DOCS_CSP if path == DOCS_PATH else CSP

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", csp.encode()))
                headers += [h for h in _HEADERS if h[0] not in names]
                if no_store and b"cache-control" not in names:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


__all__ = [
    "APP_COOKIE",
    "CONSOLE_COOKIE",
    "CSP",
    "CSRF_HEADER",
    "SAFE_METHODS",
    "SIGNIN_COOKIE",
    "SecurityHeaders",
    "check_csrf",
    "check_same_origin",
    "cookie_options",
    "csrf_token",
    "origin_of",
    "signin_token",
]
