"""Run one profiler app: ``python -m profilerhub_app`` (what ``profilerhub app`` runs).

Binds its port first (port 0 = a free one), tells the spawner which port through the port
file, then serves until SIGTERM.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from profilerhub_app.settings import AppServiceSettings


def _write_port_file(path: str, port: int) -> None:
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps({"port": port, "pid": os.getpid()}))
    tmp.replace(target)


def run(factory: Callable[[AppServiceSettings], ASGIApp] | None = None) -> None:
    """Serve the app that ``factory`` (default ``main.create_app``) builds from the environment."""
    import uvicorn

    from profilerhub_app.main import create_app
    from profilerhub_app.settings import AppServiceSettings

    factory = factory or create_app

    settings = AppServiceSettings.from_env()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((settings.host, settings.port))
    sock.listen(128)
    sock.set_inheritable(True)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        factory(settings),
        loop="asyncio",
        http="h11",
        lifespan="off",
        log_level="warning",
        access_log=False,
    )
    server = uvicorn.Server(config)
    if settings.port_file:
        _write_port_file(settings.port_file, port)
    server.run(sockets=[sock])


if __name__ == "__main__":
    run()
