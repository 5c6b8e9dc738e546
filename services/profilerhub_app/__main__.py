"""Run one app: ``python -m profilerhub_app [--type TensorBoard]`` (what ``profilerhub app`` runs).

``--type`` picks the app (default ``DetailedProfiler``, the profiler app). Binds its port first
(port 0 = a free one), tells the spawner which port through the port file, then serves until
SIGTERM.
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


APP_TYPES = ("DetailedProfiler", "TensorBoard")
"""The app types this package runs (``--type``)."""


def factory_for(app_type: str) -> Callable[[AppServiceSettings], ASGIApp]:
    """The ``create_app`` of one app type; ``ValueError`` for a type this package does not run."""
    if app_type == "DetailedProfiler":
        from profilerhub_app.main import create_app

        return create_app
    if app_type == "TensorBoard":
        from profilerhub_app.tensorboard_app import create_app as create_tensorboard_app

        return create_tensorboard_app
    raise ValueError(f"unknown app type {app_type!r} (one of {', '.join(APP_TYPES)})")


def run(
    factory: Callable[[AppServiceSettings], ASGIApp] | None = None, app_type: str = "DetailedProfiler"
) -> None:
    """Serve the app that ``factory`` (default: the ``create_app`` of ``app_type``) builds from the
    environment."""
    import uvicorn

    from profilerhub_app.settings import AppServiceSettings
    from profilerhub_core.outage import name_this_process

    name_this_process("app")
    factory = factory or factory_for(app_type)

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
    import argparse

    parser = argparse.ArgumentParser(prog="python -m profilerhub_app")
    parser.add_argument("--type", dest="app_type", choices=APP_TYPES, default="DetailedProfiler")
    run(app_type=parser.parse_args().app_type)
