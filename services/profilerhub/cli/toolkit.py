"""What every ``profilerhub`` sub-command uses, whichever package owns it.

A command module (``profilerhub_hub.cli``, ``profilerhub_worker.cli``, ...) exposes
``register(app: typer.Typer) -> None`` and is named under the ``profilerhub.commands`` entry-point
group in ``pyproject.toml``; see :mod:`profilerhub.cli.main`. This module is the one part of the
SDK package that server packages may import: standard library, typer and rich only.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import typer

from profilerhub.cli.console import err_console


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


def readable_metavars() -> None:
    """Help that names values as people do: ``--port PORT``, ``--format table|json``, and flags
    bare, instead of typer's ``<int>``, ``<str>`` and ``--help <bool>``. Called once by the root
    command; an explicit ``metavar=`` still wins."""
    from typer import core

    def option_metavar(self: Any, ctx: Any) -> str | None:
        if self.metavar is not None:
            return str(self.metavar)
        if self.is_flag:
            return None
        desc = self.type_descriptor
        if desc.is_choice and desc.choices is not None:
            shown = "|".join(str(getattr(c, "value", c)) for c in desc.choices)
        else:
            shown = (self.name or "value").upper()
        return shown + ("..." if self.nargs != 1 or self.multiple else "")

    def argument_metavar(self: Any, ctx: Any) -> str | None:
        desc = self.type_descriptor
        if desc.is_choice and desc.choices is not None:
            return "|".join(str(getattr(c, "value", c)) for c in desc.choices)
        return None  # the argument's name is shown already

    def argument_usage(self: Any) -> str:
        name = str(self.metavar or (self.name or "arg").upper())
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    option_class: Any = core.TyperOption
    argument_class: Any = core.TyperArgument
    if hasattr(option_class, "display_type_rich") and hasattr(argument_class, "display_type_rich"):
        option_class.display_type_rich = option_metavar
        argument_class.display_type_rich = argument_metavar
    if hasattr(argument_class, "_usage_display_name"):
        argument_class._usage_display_name = argument_usage


__all__ = ["err_console", "readable_metavars", "require"]
