"""The one gate of every app type: a hub-signed token on each request (health excepted).

Every request except the health check must carry a hub-signed token
(``Authorization: Bearer <jwt>``) for this app and its owner; without one the answer is 401
and nothing else.  The hub mints a fresh token for each request it proxies.  The profiler app
and the TensorBoard app both sit behind ``RequireAppToken``.
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from profilerhub_app.http import error
from profilerhub_app.settings import AppServiceSettings
from profilerhub_core.apptokens import load_public_key, verify_app_token
from profilerhub_core.errors import Unauthorized


class RequireAppToken:
    """ASGI middleware: 401 for any HTTP request without a valid hub token (health excepted)."""

    def __init__(self, app: ASGIApp, settings: AppServiceSettings) -> None:
        self.app = app
        self.settings = settings
        self.public_key = load_public_key(settings.public_key)
        self.health_path = f"{settings.base_path}health"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == self.health_path:
            await self.app(scope, receive, send)
            return
        scheme, _, token = Request(scope).headers.get("authorization", "").partition(" ")
        try:
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthorized("this app is reached through the hub")
            verify_app_token(self.public_key, token.strip(), self.settings.id, self.settings.owner_id)
        except Unauthorized as exc:
            await error(401, "Unauthorized", exc.message)(scope, receive, send)
            return
        scope.setdefault("state", {})["authenticated_at"] = time.time()
        await self.app(scope, receive, send)


__all__ = ["RequireAppToken"]
