"""Entry point of the ``profilerhub`` command.

The command gathers its sub-commands from the packages that own them. Each is a module exposing
``register(app: typer.Typer) -> None``:

- the SDK's own (``analyze``, ``upload``) live here, in ``profilerhub.cli``;
- the server's are named in ``pyproject.toml`` under the ``profilerhub.commands`` entry-point
  group (``hub = "profilerhub_hub.cli"``, ...), so this package never imports a server package.

A command that should be there and is not fails loudly: an entry point missing from the installed
metadata (a stale editable install: run ``make install``) or a module that does not import is an
error naming it, never a silently shorter ``--help``. Modules import their heavy dependencies
inside the command functions, so ``profilerhub --help`` and the SDK stay light, and a command whose
extra (``server``, ``analysis``) is not installed says what to install when it runs.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

import typer

from profilerhub.cli.toolkit import readable_metavars

ENTRY_POINT_GROUP = "profilerhub.commands"

# The server's command modules, by entry-point name, in the order --help shows them.
SERVER_COMMANDS = ("up", "hub", "worker", "app", "db")
# The SDK's own command modules (profilerhub.cli.<name>), shown after the server's.
SDK_COMMANDS = ("analyze", "compare", "upload", "login", "resources", "tokens", "apps", "jobs")

app = typer.Typer(
    name="profilerhub",
    help="ProfilerHub: self-hosted profiling for deep-learning training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class MissingCommand(RuntimeError):
    """A sub-command that should be there is not installed or does not import."""


def _print_version(asked: bool) -> None:
    if asked:
        from profilerhub import __version__

        typer.echo(f"profilerhub {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
) -> None:
    """ProfilerHub: self-hosted profiling for deep-learning training."""


@app.command()
def version() -> None:
    """Print the installed ProfilerHub version."""
    from profilerhub import __version__

    typer.echo(__version__)


def _server_modules() -> list[str]:
    declared = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    missing = [name for name in SERVER_COMMANDS if name not in declared]
    if missing:
        raise MissingCommand(
            f"profilerhub: no {ENTRY_POINT_GROUP!r} entry point for {', '.join(missing)} in the installed "
            "metadata; reinstall ProfilerHub (`make install`, or `pip install -e .` in a checkout)"
        )
    unknown = sorted(set(declared) - set(SERVER_COMMANDS))
    return [declared[name] for name in SERVER_COMMANDS] + [declared[name] for name in unknown]


def _register(module_name: str) -> None:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise MissingCommand(f"profilerhub: the command module {module_name} does not import: {exc}") from exc
    register = getattr(module, "register", None)
    if not callable(register):
        raise MissingCommand(f"profilerhub: {module_name} has no register(app) function")
    register(app)


def _register_all() -> None:
    for module_name in _server_modules():
        _register(module_name)
    for name in SDK_COMMANDS:
        _register(f"profilerhub.cli.{name}")


readable_metavars()
_register_all()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
