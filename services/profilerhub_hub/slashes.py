"""Trailing-slash redirects that never name a host.

Starlette's router answers ``/api/v1/me/`` with a redirect to the other spelling, built as an
absolute URL from the request's ``Host`` header: ``Host: evil.example`` then got ``Location:
http://evil.example/api/v1/me`` (a redirect an attacker chooses, cached by a shared proxy for
everyone). Here the router's own redirect is off, and a path that matches no route but whose
other spelling (with or without the trailing slash) does is sent there with a relative
``Location``: the path as the client sent it (still percent-encoded) and its query. A path that
would read as a host (``//evil.example/``, ``/\\evil.example/``) is not redirected at all.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.responses import RedirectResponse
from starlette.routing import Match
from starlette.types import Receive, Scope, Send


def install_slash_redirects(app: FastAPI) -> None:
    """Replace the router's trailing-slash redirect by one with a relative ``Location``."""
    router = app.router
    router.redirect_slashes = False
    not_found = router.default

    async def default(scope: Scope, receive: Receive, send: Send) -> None:
        other = _other_spelling(scope) if scope["type"] == "http" else None
        if other is not None:
            path, location = other
            if any(route.matches({**scope, "path": path})[0] is not Match.NONE for route in router.routes):
                await RedirectResponse(location, status_code=307)(scope, receive, send)
                return
        await not_found(scope, receive, send)

    router.default = default


def _flip(path: str) -> str:
    return path[:-1] if path.endswith("/") else path + "/"


def _other_spelling(scope: Scope) -> tuple[str, str] | None:
    """The path's other spelling (to match routes with) and the relative ``Location`` for it; None
    for a path that a browser could read as a host."""
    path: str = scope.get("path", "")
    raw = (scope.get("raw_path") or path.encode()).decode("latin-1")
    if len(path) < 2 or path[1] in "/\\" or raw[1:2] in ("/", "\\"):
        return None
    query = scope.get("query_string", b"").decode("latin-1")
    return _flip(path), _flip(raw) + (f"?{query}" if query else "")


__all__ = ["install_slash_redirects"]
