"""The profiler app's web application: ``create_app(settings)``.

Every request except the health check must carry a hub-signed token for this app and its owner
(``profilerhub_app.auth``); without one the answer is 401 and nothing else.

Built on Starlette alone (no FastAPI, no pydantic): one app runs per user, so its start time and
idle memory count many times over.
"""

from __future__ import annotations

import time

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from profilerhub_app import pages
from profilerhub_app.auth import RequireAppToken
from profilerhub_app.http import error as _error
from profilerhub_app.hub import HubJobs
from profilerhub_app.routes import analysis as analysis_routes
from profilerhub_app.routes import control as control_routes
from profilerhub_app.routes import jobs as job_routes
from profilerhub_app.routes import model as model_routes
from profilerhub_app.routes import rules as rules_routes
from profilerhub_app.routes import tensors as tensor_routes
from profilerhub_app.routes import timeline as timeline_routes
from profilerhub_app.routes import views as views_routes
from profilerhub_app.services import AppServices
from profilerhub_app.settings import AppServiceSettings
from profilerhub_app.warm import start_warm_up


def create_app(settings: AppServiceSettings, *, hub: HubJobs | None = None) -> Starlette:
    """Build the app for one owner; ``settings`` come from the spawner's environment.

    ``hub`` answers which jobs the owner has (default: the hub over HTTP at ``hub_api_url``).
    The app's parts are built here, once (``services.AppServices``); routes reach them through
    ``http.services(request)``.
    """
    base = settings.base_path
    state = {"last_activity": time.time()}

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    def touch() -> None:
        state["last_activity"] = time.time()

    async def whoami(request: Request) -> Response:
        return JSONResponse(
            {
                "app_id": settings.id,
                "owner": settings.owner,
                "domain": settings.domain,
                "last_activity": state["last_activity"],
            }
        )

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        if status == 405:
            return _error(405, "MethodNotAllowed", f"{request.method} is not allowed on {request.url.path}")
        return _error(404, "ResourceNotFound", f"no page at {request.url.path}")

    app = Starlette(
        routes=[
            Route(f"{base}health", health),
            Route(f"{base}api/whoami", whoami),
            *job_routes.routes(f"{base}api"),  # the owner's jobs, read from storage
            *control_routes.routes(f"{base}api"),  # a job's log, Stop and Capture (asked of the hub)
            *analysis_routes.routes(f"{base}api"),  # dashboard, ranks, compare, raw download
            *rules_routes.routes(f"{base}api"),  # rule results and the HTML profiling report
            *model_routes.routes(f"{base}api"),  # the Model page's tensors (ph.watch)
            *tensor_routes.routes(f"{base}api"),  # ph.watch's tensors (the Model page)
            *timeline_routes.routes(f"{base}api"),  # lanes, binary windows, events, search
            *views_routes.routes(f"{base}api"),  # the TensorBoard plugin's views
            *pages.routes(settings, touch),  # the HTML pages and their static modules
        ],
        middleware=[Middleware(pages.SecurityHeaders), Middleware(RequireAppToken, settings=settings)],
        exception_handlers={404: not_found, 405: not_found},
    )
    app.state.services = AppServices.build(settings, hub)  # all a route reaches: ``http.services``
    start_warm_up()  # the first page load's one-off costs, paid now (``warm``)
    return app
