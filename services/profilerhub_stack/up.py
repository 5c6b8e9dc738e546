"""``profilerhub up``: everything on one machine with embedded defaults.

It migrates the database, creates the platform administrator on first start (token printed
once), then supervises the services as child processes (hub, Celery worker and beat, with an embedded
Redis unless PROFILERHUB_REDIS_URL is set), restarting one that crashes with a backoff, and
stops them all on Ctrl-C or SIGTERM. One ``up`` per home (a lock; a second one exits saying
so); files it and its children create are private (umask 077, home 0700). A later service adds
itself in ``services()``.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from profilerhub.cli.toolkit import err_console, require
from profilerhub_core.cli import bootstrap_and_announce, database_errors, load_settings
from profilerhub_stack.supervisor import Supervisor

if TYPE_CHECKING:
    from profilerhub_core.settings import Settings
    from profilerhub_stack.embedded_redis import EmbeddedRedis

log = logging.getLogger(__name__)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "profilerhub.cli.main", *args]


def services(env: dict[str, str]) -> list[tuple[str, list[str], dict[str, str]]]:
    """(name, argv, environment) of each child process ``up`` runs, in start order."""
    return [
        ("hub", _cli("hub", "--no-bootstrap"), env),
        ("worker", _cli("worker"), env),
        ("beat", _cli("beat"), env),
    ]


def _answers(url: str) -> bool:
    import httpx

    try:
        return httpx.get(url, timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def hold_home(home: Path) -> Any:
    """Take ``home/up.lock`` (an flock held while this process lives); exit 1 saying so when another
    ``up`` holds it, before anything of the running one is touched."""
    import fcntl

    path = home / "up.lock"
    fh = path.open("a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        other = fh.read().strip() or "?"
        fh.close()
        err_console.print(
            f"[red]profilerhub up is already running on {home} (pid {other}).[/red] Stop it first, "
            "or give this one another home (--home or PROFILERHUB_HOME)."
        )
        raise typer.Exit(1) from None
    fh.truncate(0)
    fh.write(str(os.getpid()))
    fh.flush()
    return fh


@contextmanager
def apps_stack(settings: Settings, env: dict[str, str]) -> Iterator[tuple[Settings, EmbeddedRedis | None]]:
    """Start an embedded Redis unless ``settings.redis_url`` is set (its URL goes into ``env``);
    on exit suspend the local apps (``profilerhub_worker.local_apps``), then stop Redis.  Yields
    the settings with the Redis URL, and the embedded Redis (None when one was configured) to watch."""
    from profilerhub_stack.embedded_redis import EmbeddedRedis
    from profilerhub_worker.local_apps import suspend_local_apps

    embedded = None
    if not settings.redis_url:
        embedded = EmbeddedRedis(settings.home / "redis")
        env["PROFILERHUB_REDIS_URL"] = embedded.start()
        settings = settings.model_copy(update={"redis_url": env["PROFILERHUB_REDIS_URL"]})
    try:
        yield settings, embedded
    finally:
        try:
            suspended = suspend_local_apps(settings)
            if suspended:
                log.warning("stopped %d app process(es); the next `profilerhub up` restarts them", suspended)
        finally:
            if embedded is not None:
                embedded.stop()


def up(
    host: str = typer.Option(None, help="Address to listen on (default 127.0.0.1; env PROFILERHUB_HOST)."),
    port: int = typer.Option(None, help="Port to listen on (default 8080; env PROFILERHUB_PORT)."),
    home: Path = typer.Option(None, help="Home directory (default ~/.profilerhub; env PROFILERHUB_HOME)."),
) -> None:
    """Run ProfilerHub on this machine: migrate, bootstrap the admin, start and supervise services."""
    require("sqlalchemy", "server")
    from profilerhub_core.db.migrate import upgrade
    from profilerhub_core.db.session import make_engine

    settings = load_settings(host=host, port=port, home=home)
    os.umask(0o077)  # the database, its WAL, logs and instance.json: readable by this user only
    settings.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    settings.home.chmod(0o700)
    lock = hold_home(settings.home)  # noqa: F841 - held until this process exits
    with database_errors(settings.database_url):
        engine = make_engine(settings)
        upgrade(engine)
        bootstrap_and_announce(settings, engine)
    engine.dispose()

    env = dict(os.environ)
    env.update(
        PROFILERHUB_HOME=str(settings.home),
        PROFILERHUB_HOST=settings.host,
        PROFILERHUB_PORT=str(settings.port),
        PROFILERHUB_DATABASE_URL=settings.database_url,
    )
    with apps_stack(settings, env) as (_, embedded):  # embedded Redis unless configured
        supervisor = Supervisor(on_event=lambda message: err_console.print(f"[dim]up:[/dim] {message}"))
        for name, argv, child_env in services(env):
            supervisor.add(name, argv, child_env)
        if embedded is not None:
            supervisor.watch("redis", alive=embedded.running, restart=embedded.restart)
        supervisor.start_all()
        local = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
        health = f"http://{local}:{settings.port}/healthz"
        code = supervisor.wait(
            ready=lambda: _answers(health),
            on_ready=lambda: err_console.print(
                f"ProfilerHub is running at [bold]{settings.public_url}[/bold] (Ctrl-C stops it)"
            ),
        )
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command()(up)
