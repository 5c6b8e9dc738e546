"""``profilerhub worker`` and ``profilerhub beat``: the Celery worker and scheduler, alone.

``profilerhub up`` runs both for you; production runs them as their own services against
``PROFILERHUB_REDIS_URL``.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from profilerhub.cli.toolkit import err_console, require
from profilerhub_core.cli import database_errors, load_settings, require_migrated


def _settings(home: Path | None):
    if home is not None:
        os.environ["PROFILERHUB_HOME"] = str(home)
    settings = load_settings()
    if not settings.redis_url:
        err_console.print(
            "[red]error:[/red] PROFILERHUB_REDIS_URL is not set. Point it at a Redis server "
            "(redis://host:6379/0), or run `profilerhub up`, which starts an embedded one."
        )
        raise typer.Exit(2)
    return settings


def worker(
    concurrency: int = typer.Option(None, help="Tasks run at once [env PROFILERHUB_WORKER_CONCURRENCY]."),
    home: Path = typer.Option(None, help="Home directory [env PROFILERHUB_HOME]."),
    loglevel: str = typer.Option("warning", help="Celery log level (info logs every task)."),
) -> None:
    """Run a Celery worker: spawns, stops, reconciles and culls apps."""
    require("celery", "server")
    from profilerhub_core.db.session import make_engine
    from profilerhub_worker.context import worker_celery

    settings = _settings(home)
    with database_errors(settings.database_url):
        engine = make_engine(settings)
        require_migrated(engine)
    engine.dispose()
    celery = worker_celery(settings)
    threads = concurrency or settings.worker_concurrency

    from celery.signals import worker_ready

    from profilerhub_core.tasks import RECONCILE_APPS

    @worker_ready.connect(weak=False)
    def reconcile_at_start(**_: object) -> None:
        # Heal at once what changed while no worker ran (apps that died, `up`'s suspended apps).
        celery.send_task(RECONCILE_APPS)

    # Threads: app tasks mostly wait (for a process to answer), and each holds its own session.
    celery.worker_main(
        [
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            str(threads),
            "--queues",
            settings.celery_queue,
            "--loglevel",
            loglevel,
            "--hostname",
            f"profilerhub-{os.getpid()}@%h",
            "--without-mingle",
            "--without-gossip",
        ]
    )


def beat(
    home: Path = typer.Option(None, help="Home directory [env PROFILERHUB_HOME]."),
    loglevel: str = typer.Option("warning", help="Celery log level (info logs every task)."),
) -> None:
    """Run the scheduler that sends the periodic tasks (reconcile, poll, cull idle apps)."""
    require("celery", "server")
    from profilerhub_worker.context import worker_celery

    settings = _settings(home)
    celery = worker_celery(settings, with_context=False)
    schedule = settings.home / "celerybeat-schedule"
    settings.home.mkdir(parents=True, exist_ok=True)
    celery.start(["beat", "--schedule", str(schedule), "--loglevel", loglevel])


def register(app: typer.Typer) -> None:
    app.command()(worker)
    app.command()(beat)
