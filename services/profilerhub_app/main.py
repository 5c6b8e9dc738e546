"""The profiler app's web application: ``create_app(settings)``.

Every request except the health check must carry a hub-signed token
(``Authorization: Bearer <jwt>``) for this app and its owner; without one the answer is 401
and nothing else.  The hub mints a fresh token for each request it proxies.
"""

from __future__ import annotations

import html
import time
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse

from profilerhub_app.routes import jobs as job_routes
from profilerhub_app.settings import AppServiceSettings
from profilerhub_core.apptokens import load_public_key, verify_app_token
from profilerhub_core.errors import Unauthorized


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def create_app(settings: AppServiceSettings) -> FastAPI:
    """Build the app for one owner; ``settings`` come from the spawner's environment."""
    public_key = load_public_key(settings.public_key)
    base = settings.base_path
    health_path = f"{base}health"
    app = FastAPI(title="ProfilerHub app", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    app.state.last_activity = time.time()

    @app.middleware("http")
    async def require_app_token(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if request.url.path == health_path:
            return await call_next(request)
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return _error(401, "Unauthorized", "this app is reached through the hub")
        try:
            verify_app_token(public_key, token.strip(), settings.id, settings.owner_id)
        except Unauthorized as exc:
            return _error(401, "Unauthorized", exc.message)
        app.state.last_activity = time.time()
        return await call_next(request)

    @app.get(health_path)
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(base, response_class=HTMLResponse)
    async def home() -> str:
        owner = html.escape(settings.owner)
        domain = html.escape(settings.domain)
        return (
            "<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{owner}'s profiler</title></head><body>"
            f"<h1 id='owner'>{owner}'s profiler</h1>"
            f"<p>Domain <b>{domain}</b>, app <code>{html.escape(settings.id)}</code>.</p>"
            "<p>No jobs yet: profile a training run with the ProfilerHub SDK.</p>"
            "</body></html>"
        )

    @app.get(f"{base}api/whoami")
    async def whoami() -> dict[str, object]:
        return {
            "app_id": settings.id,
            "owner": settings.owner,
            "domain": settings.domain,
            "last_activity": app.state.last_activity,
        }

    @app.api_route(f"{base}api/echo", methods=["POST", "PUT", "PATCH", "DELETE"])
    async def echo(request: Request) -> dict[str, object]:
        """Answers what it received; lets tests check that any method and body pass the proxy."""
        body = await request.body()
        return {"method": request.method, "size": len(body), "query": str(request.url.query)}

    app.include_router(job_routes.router, prefix=f"{base}api")  # the owner's jobs (issue 5)

    @app.exception_handler(404)
    async def not_found(request: Request, exc: Exception) -> JSONResponse:
        return _error(404, "ResourceNotFound", f"no page at {request.url.path}")

    return app
