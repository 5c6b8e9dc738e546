"""What the server commands (``up``, ``hub``, ``worker``, ``beat``, ``db``) share.

Imported when the ``profilerhub`` command starts, so only typer and rich at the top; SQLAlchemy,
pydantic and the rest are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer

from profilerhub.cli.toolkit import err_console

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from profilerhub_core.settings import Settings


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment (CLI options win), or a readable error and exit code 2."""
    from pydantic import ValidationError

    from profilerhub_core.settings import Settings

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]
    except ValidationError as exc:
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"]) or "settings"
            err_console.print(f"[red]error:[/red] {where}: {error['msg']}")
        raise typer.Exit(2) from None


def require_migrated(engine: Engine) -> None:
    """Exit with the reason and what to run when the database is not at this version's schema."""
    from profilerhub_core.db.migrate import SchemaNotMigrated, check_migrated

    try:
        check_migrated(engine)
    except SchemaNotMigrated as exc:
        err_console.print(f"[red]error:[/red] {exc.message}")
        raise typer.Exit(1) from None


@contextmanager
def database_errors(url: str) -> Iterator[None]:
    """Turn a URL SQLAlchemy cannot use (exit 2) or a database that does not answer (exit 1)
    into one readable line that says what to check. ``url`` is shown with its password hidden."""
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


def bootstrap_and_announce(settings: Settings, engine: Engine) -> None:
    """Create the platform admin on first start and show its token this one time."""
    from rich.console import Console
    from rich.panel import Panel

    from profilerhub_core.bootstrap import ADMIN_TOKEN_FILE, first_start

    secret = first_start(settings, engine)
    path = settings.home / ADMIN_TOKEN_FILE
    console = Console(stderr=True)
    if secret is not None:
        console.print(
            Panel(
                f"Platform administrator: [bold]admin[/bold]\nToken (shown once): [bold]{secret}[/bold]\n"
                f"Also saved to {path} (mode 0600).",
                title="ProfilerHub first start",
            )
        )
    elif settings.admin_token is not None:
        console.print("Admin token: the value of PROFILERHUB_ADMIN_TOKEN")
    elif path.exists():
        console.print(f"Admin token: in {path}", soft_wrap=True)  # a long path stays whole, to copy


__all__ = ["bootstrap_and_announce", "database_errors", "load_settings", "require_migrated"]
