"""A profiler app with one more route, for tests: ``/apps/{id}/api/echo`` answers what it received.

The product has no such route; tests that check that any method, body and query pass the proxy
(or reach the app) add it here. ``EchoAppSpawner`` is the local spawner starting this module's app
(``spawner = "tests.support.echo_app:EchoAppSpawner"``), a real process like the product's.

    python -m tests.support.echo_app    # what EchoAppSpawner runs (PROFILERHUB_APP_* as usual)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from profilerhub_app.main import create_app
from profilerhub_app.settings import AppServiceSettings
from profilerhub_worker.spawners import LocalProcessSpawner

ROOT = Path(__file__).resolve().parents[2]
ECHO_METHODS = ["POST", "PUT", "PATCH", "DELETE"]


async def echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse({"method": request.method, "size": len(body), "query": request.url.query})


def create_echo_app(settings: AppServiceSettings) -> Starlette:
    """``create_app(settings)`` plus the echo route (behind the same token check)."""
    app = create_app(settings)
    app.router.routes.insert(0, Route(f"{settings.base_path}api/echo", echo, methods=ECHO_METHODS))
    return app


class EchoAppSpawner(LocalProcessSpawner):
    """The local spawner, running ``create_echo_app`` instead of the product's app."""

    def command(self) -> list[str]:
        return [sys.executable, "-m", "tests.support.echo_app"]

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        return env


if __name__ == "__main__":
    from profilerhub_app.__main__ import run

    run(create_echo_app)
