"""One readable line, not a traceback, when the database cannot be used at all."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

from profilerhub.cli._extras import err_console


@contextmanager
def database_errors(url: str) -> Iterator[None]:
    """Turn a URL SQLAlchemy cannot use (exit 2) or a database that does not answer (exit 1)
    into an error that says what to check. ``url`` is shown with its password hidden."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

    try:
        yield
    except (ArgumentError, NoSuchModuleError) as exc:
        err_console.print(
            f"[red]error:[/red] PROFILERHUB_DATABASE_URL is not a database URL ProfilerHub can use ({exc}); "
            "use sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB"
        )
        raise typer.Exit(2) from None
    except DBAPIError as exc:
        try:
            where = make_url(url).render_as_string(hide_password=True)
        except ArgumentError:
            where = "the database"
        reason = str(exc.orig or exc).strip().splitlines()[0]
        err_console.print(
            f"[red]error:[/red] cannot use {where}: {reason}. "
            "Check that it is running and that PROFILERHUB_DATABASE_URL points at it."
        )
        raise typer.Exit(1) from None


__all__ = ["database_errors"]
