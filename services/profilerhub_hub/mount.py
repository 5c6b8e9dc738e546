"""A router's routes added to the app as the router built them, never built a second time.

``app.include_router`` keeps the router and builds each of its routes again for the app on the
first request (~1 ms a route: most of the hub's first answer after a start), then matches every
request through the router's copies, dearer than plain routes. The hub's routes never differ
between apps, so ``create_app`` (and the console's and the proxy's ``install_…``) add them to the
app as they are; a route module's paths are therefore complete when it declares them (the API's
under ``/api/v1``: ``routes.paths.api_router``).
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI


def mount_routes(app: FastAPI, router: APIRouter) -> None:
    """Add ``router``'s routes (path, tags, dependencies as built) to the end of ``app``'s."""
    app.router.routes.extend(router.routes)


__all__ = ["mount_routes"]
