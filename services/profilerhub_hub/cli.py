"""``profilerhub hub``: the API server alone (production). It never migrates: run ``db upgrade``."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import typer

from profilerhub.cli.toolkit import require
from profilerhub_core.cli import bootstrap_and_announce, database_errors, load_settings, require_migrated


def hub(
    host: str = typer.Option(None, help="Address to listen on (default 127.0.0.1; env PROFILERHUB_HOST)."),
    port: int = typer.Option(None, help="Port to listen on (default 8080; env PROFILERHUB_PORT)."),
    home: Path = typer.Option(None, help="Home directory (default ~/.profilerhub; env PROFILERHUB_HOME)."),
    bootstrap: bool = typer.Option(
        True, hidden=True, help="Create the platform admin if missing (up does it)."
    ),
    workers: int = typer.Option(
        None,
        min=1,
        help="Server processes (default one per CPU core, at most 4; env PROFILERHUB_HUB_WORKERS).",
    ),
) -> None:
    """Run the hub's HTTP API. Refuses an un-migrated database (run `profilerhub db upgrade`)."""
    # No cyclic collections while the process imports and builds the app (a tenth of the start;
    # profilerhub_hub.main.pause_collection says why); freeze_startup_objects turns them on again.
    gc.disable()
    require("uvicorn", "server")
    import uvicorn

    from profilerhub_core.db.session import make_engine
    from profilerhub_core.outage import name_this_process

    name_this_process("hub")
    # Options become environment variables so that worker processes build the same settings.
    for name, value in (("HOST", host), ("PORT", port), ("HOME", home), ("HUB_WORKERS", workers)):
        if value is not None:
            os.environ[f"PROFILERHUB_{name}"] = str(value)
    settings = load_settings()
    with database_errors(settings.database_url):
        engine = make_engine(settings)
        require_migrated(engine)
        if bootstrap:
            bootstrap_and_announce(settings, engine)
    config = {"host": settings.host, "port": settings.port, "log_level": settings.log_level,
              "access_log": settings.access_log, "server_header": False,
              # The peer's address is the client's; X-Forwarded-For is read by the hub alone, and only
              # from PROFILERHUB_TRUSTED_PROXIES (ratelimit.client_address): uvicorn trusts 127.0.0.1's.
              "proxy_headers": False,
              # The hub serves no WebSocket (its proxy forwards HTTP): uvicorn need not import one.
              "ws": "none"}  # fmt: skip
    if settings.effective_hub_workers > 1:
        engine.dispose()
        _fork_workers()
        gc.enable()  # this process supervises; each worker process pauses its own (app_from_env)
        factory = "profilerhub_hub.main:app_from_env"
        # uvicorn restarts a worker that misses a 5 s health ping; on a loaded machine a worker still
        # importing misses it, and every replacement did too (the hub never came up): allow a minute.
        config["timeout_worker_healthcheck"] = 60
        uvicorn.run(factory, factory=True, workers=settings.effective_hub_workers, **config)  # type: ignore[arg-type]
        return
    from profilerhub_hub.main import create_app, freeze_startup_objects

    app = create_app(settings, engine=engine)
    freeze_startup_objects()
    uvicorn.run(app, **config)  # type: ignore[arg-type]


def _fork_workers() -> None:
    """Have uvicorn's supervisor fork its worker processes from this one, once it has imported the
    app's modules, instead of spawning fresh interpreters that import them all again: a worker then
    only builds its app. Two workers on a 2-core machine answered /healthz after 1.28-1.39 s
    spawned and 0.87-0.92 s forked, quiet (17 s and 8.4-9.1 s at load 10-12; one process: 0.80 s).
    Safe to fork here: the modules are imported, nothing is built (no connection -- the engine was
    disposed -- no thread, no event loop), and uvicorn's supervisor forks again only to replace a
    dead worker, from this same state."""
    import multiprocessing
    import threading

    import uvicorn._subprocess

    import profilerhub_hub.main  # noqa: F401  (what each worker would import)

    if threading.active_count() > 1:
        return  # a thread (a plugin's) would not be copied into the workers: spawn them, as uvicorn does
    uvicorn._subprocess.spawn = multiprocessing.get_context("fork")  # type: ignore[assignment]


def register(app: typer.Typer) -> None:
    app.command()(hub)
