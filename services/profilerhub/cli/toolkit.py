"""What every ``profilerhub`` sub-command uses, whichever package owns it.

A command module (``profilerhub_hub.cli``, ``profilerhub_worker.cli``, ...) exposes
``register(app: typer.Typer) -> None`` and is named under the ``profilerhub.commands`` entry-point
group in ``pyproject.toml``; see :mod:`profilerhub.cli.main`. This module is the one part of the
SDK package that server packages may import: standard library, typer and rich only.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import typer
from rich.console import Console

err_console = Console(stderr=True)


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or exit with a message naming the pip extra that provides it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        err_console.print(
            f"[red]error:[/red] this command needs the '{extra}' extra ({exc.name} is missing).\n"
            f"Install it with: pip install 'profilerhub[{extra}]'"
        )
        raise typer.Exit(2) from exc


__all__ = ["err_console", "require"]
