"""Entry point of the ``profilerhub`` command.

Each sub-command lives in its own module under ``profilerhub.cli`` and exposes
``register(app: typer.Typer) -> None``.  Modules import their heavy dependencies inside the
command functions, so ``profilerhub --help`` and the SDK stay light, and a command whose extra
(``server``, ``analysis``) is not installed fails with a message saying what to install.
"""

from __future__ import annotations

import importlib

import typer

# Order is the order shown in --help.
COMMAND_MODULES = (
    "up",
    "hub",
    "worker",
    "app",
    "db",
    "analyze",
    "compare",
    "upload",
)

app = typer.Typer(
    name="profilerhub",
    help="ProfilerHub: self-hosted profiling for deep-learning training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """ProfilerHub: self-hosted profiling for deep-learning training."""


@app.command()
def version() -> None:
    """Print the installed ProfilerHub version."""
    from profilerhub import __version__

    typer.echo(__version__)


def _register_all() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"profilerhub.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"profilerhub.cli.{name}":
                continue  # command not built yet
            raise
        module.register(app)


_register_all()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
