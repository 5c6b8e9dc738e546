"""``profilerhub db``: bring the database schema to this version's (``upgrade``), say where it is
(``current``, ``history``), or take it back to an earlier revision for a rollback (``downgrade``;
docs/operations.md, "Rolling back a release")."""

from __future__ import annotations

import typer

from profilerhub.cli.toolkit import err_console, require
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


@db_app.command("history")
def history() -> None:
    """List the schema revisions this ProfilerHub ships, oldest first, marking the database's."""
    require("sqlalchemy", "server")
    from profilerhub_core.db.migrate import current_revision, revisions
    from profilerhub_core.db.session import make_engine

    settings = load_settings()
    with database_errors(settings.database_url):
        revision = current_revision(make_engine(settings))
    for rev, doc in revisions():
        typer.echo(f"{rev}{' (current)' if rev == revision else ''}  {doc}")


@db_app.command("downgrade")
def downgrade(
    revision: str = typer.Argument(
        ..., help="The revision to go back to (`profilerhub db history`), or `base` for none at all."
    ),
    yes: bool = typer.Option(False, "--yes", help="Do not ask before dropping what later revisions added."),
) -> None:
    """Take the database back to REVISION: run the downgrade of every later migration, newest first.

    What those revisions added (tables, columns) is dropped with its data; back the database up
    first. Run it with the version that migrated the database (it has the downgrades), then
    install the older version.
    """
    require("sqlalchemy", "server")
    from profilerhub_core.db.migrate import current_revision, revisions
    from profilerhub_core.db.migrate import downgrade as run_downgrade
    from profilerhub_core.db.session import make_engine

    shipped = revisions()
    order = ["base", *(rev for rev, _ in shipped)]
    if revision not in order:
        err_console.print(
            f"[red]error:[/red] {revision!r} is not a revision of this ProfilerHub; choose one of "
            f"{', '.join(order)} (`profilerhub db history`)"
        )
        raise typer.Exit(2)
    settings = load_settings()
    with database_errors(settings.database_url):
        engine = make_engine(settings)
        where = engine.url.render_as_string(hide_password=True)
        current = current_revision(engine)
        if current is None or current not in order:
            err_console.print(
                f"[red]error:[/red] {where} is at revision {current or 'empty'}, which this ProfilerHub "
                "cannot downgrade from (empty, or migrated by a newer version: downgrade with that one)"
            )
            raise typer.Exit(1)
        if order.index(revision) >= order.index(current):
            what = "already at" if revision == current else "behind"
            err_console.print(
                f"[red]error:[/red] {where} is {what} revision {revision} (it is at {current}); "
                "nothing to downgrade (`profilerhub db upgrade` moves forward)"
            )
            raise typer.Exit(2)
        undone = [
            f"{rev} ({doc})" for rev, doc in reversed(shipped[order.index(revision) : order.index(current)])
        ]
        typer.echo(f"Downgrading {where} from {current} to {revision} undoes, newest first:")
        for line in undone:
            typer.echo(f"  {line}")
        typer.echo(
            "What they added (tables, columns) is dropped with its data. Stop every hub and worker first."
        )
        if not yes:
            typer.confirm("Downgrade now?", abort=True)
        run_downgrade(engine, revision)
    typer.echo(f"{where} downgraded from {current} to {revision}")


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
