"""The hub's ASGI application: ``create_app(settings)``.

    app = create_app(Settings())          # checks the database is migrated, then builds the app
    uvicorn.run(app, host=..., port=...)

For ``uvicorn --factory`` (several worker processes), ``app_from_env`` builds the settings from
the environment. ``app.state`` holds one object, ``services`` (``profilerhub_hub.services``): the
settings, the database, what hub processes share through Redis, the task sender, the keys.
"""

from __future__ import annotations

import gc

from fastapi import FastAPI
from sqlalchemy.engine import Engine

from profilerhub_core.db.migrate import check_migrated
from profilerhub_core.db.session import make_engine
from profilerhub_core.lifeline import die_with_spawning_process
from profilerhub_core.outage import name_this_process
from profilerhub_core.settings import Settings
from profilerhub_core.version import installed_version
from profilerhub_hub.app_hosts import AppHosts
from profilerhub_hub.browser import SecurityHeaders
from profilerhub_hub.console.routes import install_console
from profilerhub_hub.deps import SessionCloser
from profilerhub_hub.errors import BodyLimitMiddleware, install_error_handlers
from profilerhub_hub.mount import mount_routes
from profilerhub_hub.openapi import install_openapi
from profilerhub_hub.proxy import install_app_proxy
from profilerhub_hub.routes import api_routers, health
from profilerhub_hub.routes.paths import API_PREFIX, JOB_FILES, path_regex
from profilerhub_hub.sagemaker import SageMakerDoor
from profilerhub_hub.services import HubServices
from profilerhub_hub.slashes import install_slash_redirects

# Path prefixes with their own request-body limit (None = unlimited: streamed to storage or an app).
BODY_LIMIT_OVERRIDES: dict[str, int | None] = {
    "/apps/": None,
    path_regex(API_PREFIX + JOB_FILES): None,
}


def create_app(settings: Settings, *, engine: Engine | None = None, check_schema: bool = True) -> FastAPI:
    """Build the hub for ``settings``. Raises ``SchemaNotMigrated`` on an un-migrated database."""
    engine = engine or make_engine(settings)
    if check_schema:
        check_migrated(engine)
    app = FastAPI(
        title="ProfilerHub",
        version=installed_version(),
        summary="Control-plane API: domains, users, tokens, apps, jobs, audit.",
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=None,  # served by the console with vendored assets (no CDN): profilerhub_hub.console
        redoc_url=None,
    )
    services = app.state.services = HubServices.build(settings, engine)  # the one thing on app.state
    install_error_handlers(app)
    for router in (*api_routers, health.root_router):
        mount_routes(app, router)
    install_app_proxy(app, services)
    install_openapi(app, settings)
    install_console(app)
    install_slash_redirects(app)
    # boto3's door, /sagemaker (docs/sagemaker-api.md): inside the middleware below, before the router.
    app.add_middleware(SageMakerDoor)
    app.add_middleware(SessionCloser)
    app.add_middleware(
        BodyLimitMiddleware, limit=settings.max_request_body_bytes, overrides=dict(BODY_LIMIT_OVERRIDES)
    )
    if settings.app_subdomain_host:  # each app on an origin of its own (docs/console.md)
        app.add_middleware(AppHosts, settings=settings)
    app.add_middleware(SecurityHeaders)
    return app


def pause_collection() -> None:
    """Stop the cyclic garbage collector until ``freeze_startup_objects``: what a server process
    builds before it serves (modules, models, routes) lives as long as the process, and the
    collections that import's allocations set off (a tenth of the hub's start) would find next
    to nothing (~3,000 objects, under 1 MiB)."""
    gc.disable()


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory profilerhub_hub.main:app_from_env``.

    In a worker process of uvicorn's supervisor (``--workers N``) it first ties the process's life
    to the supervisor's: a supervisor killed with SIGKILL takes its workers (and their hold on the
    port) with it instead of orphaning them.
    """
    pause_collection()
    die_with_spawning_process()
    name_this_process("hub")
    app = create_app(Settings())
    freeze_startup_objects()
    return app


def freeze_startup_objects() -> None:
    """Move everything built so far (modules, models, routes) out of the garbage collector's view,
    and turn the collector on again (``pause_collection``).

    A server process calls this once its app is built: the oldest-generation collections then
    walk only what requests allocate instead of a few hundred thousand long-lived objects (about
    a tenth of a simple request's CPU).
    """
    gc.freeze()  # no gc.collect() first: it took ~70 ms of the start and found a few dozen objects
    gc.enable()


__all__ = [
    "API_PREFIX",
    "BODY_LIMIT_OVERRIDES",
    "app_from_env",
    "create_app",
    "freeze_startup_objects",
    "pause_collection",
]
