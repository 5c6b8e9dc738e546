"""``profilerhub db upgrade``: bring the database schema to this version's."""

from __future__ import annotations

import typer

from profilerhub.cli.toolkit import require
from profilerhub_core.cli import database_errors, load_settings

db_app = typer.Typer(help="Manage the database schema.", no_args_is_help=True)


@db_app.command("upgrade")
def upgrade() -> None:
    """Apply every pending migration to PROFILERHUB_DATABASE_URL (default: SQLite in the home dir)."""
    require("sqlalchemy", "server")
    from profilerhub_core.db.migrate import current_revision, head_revision
    from profilerhub_core.db.migrate import upgrade as run_upgrade
    from profilerhub_core.db.session import make_engine

    settings = load_settings()
    with database_errors(settings.database_url):
        engine = make_engine(settings)
        before = current_revision(engine)
        run_upgrade(engine)
    after = head_revision()
    where = engine.url.render_as_string(hide_password=True)
    if before == after:
        typer.echo(f"{where} is already at revision {after}")
    else:
        typer.echo(f"{where} upgraded from {before or 'empty'} to {after}")


@db_app.command("current")
def current() -> None:
    """Print the database's schema revision and the one this ProfilerHub needs."""
    require("sqlalchemy", "server")
    from profilerhub_core.db.migrate import current_revision, head_revision
    from profilerhub_core.db.session import make_engine

    settings = load_settings()
    with database_errors(settings.database_url):
        revision = current_revision(make_engine(settings))
    typer.echo(f"database: {revision or 'empty'}; needed: {head_revision()}")


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
