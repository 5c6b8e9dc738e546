"""Helpers for the server commands (up, hub, db); server packages are imported inside functions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from profilerhub.cli._extras import err_console

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


def bootstrap_and_announce(settings: Settings, engine: Engine) -> None:
    """Create the platform admin on first start and show its token this one time."""
    from rich.console import Console
    from rich.panel import Panel

    from profilerhub_hub.bootstrap import ADMIN_TOKEN_FILE, first_start

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
        console.print(f"Admin token: in {path}")


__all__ = ["bootstrap_and_announce", "load_settings", "require_migrated"]
