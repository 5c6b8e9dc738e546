"""``profilerhub worker`` and ``profilerhub beat``: the Celery worker and scheduler, alone.

``profilerhub up`` runs both for you; production runs them as their own services against
``PROFILERHUB_REDIS_URL``.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from profilerhub.cli.toolkit import err_console, require
from profilerhub_core.cli import database_errors, load_settings, require_migrated
from profilerhub_core.outage import name_this_process

if TYPE_CHECKING:
    from celery import Celery

    from profilerhub_core.settings import Settings


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


def worker_celery(settings: Settings, *, with_context: bool = True) -> Celery:
    """The Celery app a worker (or beat) process runs, with its context attached."""
    from profilerhub_worker.celery_app import make_celery
    from profilerhub_worker.context import build_context
    from profilerhub_worker.runtime import runtime_of

    if not settings.redis_url:
        raise ValueError("PROFILERHUB_REDIS_URL is not set")
    celery = make_celery(
        settings.redis_url,
        queue=settings.celery_queue,
        reconcile_every=settings.reconcile_seconds,
        poll_every=settings.app_poll_seconds,
        cull_every=settings.cull_seconds,
        sweep_every=settings.storage_sweep_seconds,
        rules_every=settings.rules_scan_interval_seconds,
        retention_every=settings.series_retention_seconds,
    )
    runtime = runtime_of(celery)
    runtime.settings = settings  # for the ingest tasks
    if with_context:
        runtime.apps = build_context(settings, celery)
    return celery


def worker(
    concurrency: int = typer.Option(None, help="Tasks run at once (env PROFILERHUB_WORKER_CONCURRENCY)."),
    home: Path = typer.Option(None, help="Home directory (env PROFILERHUB_HOME)."),
    loglevel: str = typer.Option("warning", help="Celery log level (info logs every task)."),
    queues: str = typer.Option(
        "apps,ingest",
        help="Which queues to consume, comma-separated: apps (app lifecycle, webhooks), ingest (job "
        "tasks) or both; a cluster runs a worker Deployment for each so ingest never delays apps.",
    ),
) -> None:
    """Run a Celery worker: spawns, stops, reconciles and culls apps; ingests jobs."""
    require("celery", "server")
    from profilerhub_core.db.session import make_engine
    from profilerhub_core.tasks import queues_of

    name_this_process("worker")
    settings = _settings(home)
    try:
        consumed = queues_of(
            settings.celery_queue, [kind.strip() for kind in queues.split(",") if kind.strip()]
        )
    except ValueError as exc:
        err_console.print(f"[red]error:[/red] --queues: {exc}")
        raise typer.Exit(2) from exc
    with database_errors(settings.database_url):
        engine = make_engine(settings)
        require_migrated(engine)
    engine.dispose()
    celery = worker_celery(settings)
    threads = concurrency or settings.worker_concurrency

    from celery.signals import worker_ready

    from profilerhub_core.tasks import RECONCILE_APPS

    hostname = f"profilerhub-{os.getpid()}@{socket.gethostname()}"

    @worker_ready.connect(weak=False)
    def reconcile_at_start(**_: object) -> None:
        # Heal at once what changed while no worker ran (apps that died, `up`'s suspended apps).
        celery.send_task(RECONCILE_APPS)

    from profilerhub_worker.heartbeat import start_heartbeat

    assert settings.redis_url
    stop_heartbeat = start_heartbeat(settings.redis_url, settings.celery_queue, hostname, consumed)
    crash = _Unrecoverable()
    # On Celery's own logger, not the root: a root logger with any handler counts as configured,
    # and Celery would then add none of its own (every worker log line lost).
    logging.getLogger("celery").addHandler(crash)
    code: object = 0
    # Threads: app tasks mostly wait (for a process to answer), and each holds its own session.
    try:
        _run_worker(celery, threads, ",".join(consumed), loglevel, hostname)
    except SystemExit as exc:
        code = exc.code
    finally:
        stop_heartbeat()
        logging.getLogger("celery").removeHandler(crash)
    if crash.message is not None:
        # Celery logs "Unrecoverable error" (kombu's restore_unacked_once when Redis drops mid-task)
        # and returns as if stopped cleanly; a supervisor (up, systemd, Kubernetes) must see a crash.
        err_console.print(f"worker: stopped on an unrecoverable error: {crash.message}")
        raise typer.Exit(EXIT_UNRECOVERABLE)
    if code not in (0, None):
        raise typer.Exit(code if isinstance(code, int) else 1)


EXIT_UNRECOVERABLE = 70  # EX_SOFTWARE


class _Unrecoverable(logging.Handler):
    """Remembers Celery's CRITICAL "Unrecoverable error" line (the worker then exits 0 by itself)."""

    def __init__(self) -> None:
        super().__init__(logging.CRITICAL)
        self.message: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "Unrecoverable error" in text:
            self.message = text[:300]


def _run_worker(celery: Any, threads: int, queues: str, loglevel: str, hostname: str) -> None:
    celery.worker_main(
        [
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            str(threads),
            "--queues",
            queues,
            "--loglevel",
            loglevel,
            "--hostname",
            hostname,
            "--without-mingle",
            "--without-gossip",
        ]
    )


def beat(
    home: Path = typer.Option(None, help="Home directory (env PROFILERHUB_HOME)."),
    loglevel: str = typer.Option("warning", help="Celery log level (info logs every task)."),
) -> None:
    """Run the scheduler that sends the periodic tasks (reconcile, poll, cull idle apps)."""
    require("celery", "server")

    name_this_process("beat")
    settings = _settings(home)
    celery = worker_celery(settings, with_context=False)
    schedule = settings.home / "celerybeat-schedule"
    settings.home.mkdir(parents=True, exist_ok=True)
    scheduler = "profilerhub_worker.outages:OutageAwareScheduler"  # a Redis outage: two lines, not a flood
    celery.start(["beat", "--schedule", str(schedule), "--scheduler", scheduler, "--loglevel", loglevel])


def register(app: typer.Typer) -> None:
    app.command()(worker)
    app.command()(beat)
