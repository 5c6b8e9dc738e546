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

The app is built on first use (``app`` here, or ``main()``), not at import: a plain
``profilerhub analyze TRACE`` never builds it (``profilerhub.cli.analyze_run.fast_path``), so
analysing many small traces one process each is not dominated by typer's and pydantic's start-up.
A server command (``profilerhub hub …``, ``worker``, ``app``, ``up``, ``db``: the processes the
stack starts, and restarts) gets an app with that one command registered, after the same check
that every command's entry point is declared; ``--help`` at the top and every other command get
them all.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

ENTRY_POINT_GROUP = "profilerhub.commands"

# The server's command modules, by entry-point name, in the order --help shows them.
SERVER_COMMANDS = ("up", "hub", "worker", "app", "db")
# The SDK's own command modules (profilerhub.cli.<name>), shown after the server's.
SDK_COMMANDS = ("analyze", "compare", "upload", "login", "resources", "tokens", "apps", "jobs")

_app: typer.Typer | None = None


class MissingCommand(RuntimeError):
    """A sub-command that should be there is not installed or does not import."""


def entry_points(group: str) -> Any:
    """``importlib.metadata.entry_points(group=...)``, imported when the app is built."""
    from importlib import metadata

    return metadata.entry_points(group=group)


def _print_version(asked: bool) -> None:
    import typer

    if asked:
        from profilerhub import __version__

        typer.echo(f"profilerhub {__version__}")
        raise typer.Exit()


def _build(only: str | None = None) -> typer.Typer:
    """The typer app with every sub-command, or (``only``: a server command's entry-point name)
    with that one alone."""
    import typer

    from profilerhub.cli.toolkit import readable_metavars

    built = typer.Typer(
        name="profilerhub",
        help="ProfilerHub: self-hosted profiling for deep-learning training.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @built.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ) -> None:
        """ProfilerHub: self-hosted profiling for deep-learning training."""

    @built.command()
    def version() -> None:
        """Print the installed ProfilerHub version."""
        from profilerhub import __version__

        typer.echo(__version__)

    readable_metavars()
    if only is None:
        _register_all(built)
    else:
        _register(_server_modules()[SERVER_COMMANDS.index(only)], built)
    return built


def get_app() -> typer.Typer:
    """The ``profilerhub`` typer app with every sub-command registered (built once)."""
    global _app
    if _app is None:
        _app = _build()
    return _app


def __getattr__(name: str) -> Any:
    if name == "app":
        return get_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def _register(module_name: str, app: typer.Typer | None = None) -> None:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise MissingCommand(f"profilerhub: the command module {module_name} does not import: {exc}") from exc
    register = getattr(module, "register", None)
    if not callable(register):
        raise MissingCommand(f"profilerhub: {module_name} has no register(app) function")
    register(app if app is not None else get_app())


def _register_all(app: typer.Typer) -> None:
    for module_name in _server_modules():
        _register(module_name, app)
    for name in SDK_COMMANDS:
        _register(f"profilerhub.cli.{name}", app)


def server_command(argv: list[str]) -> str | None:
    """The server command ``argv`` runs (``hub`` of ``hub --port 8081``), else None."""
    return argv[0] if argv and argv[0] in SERVER_COMMANDS else None


def main() -> None:
    from profilerhub.cli.analyze_run import fast_path

    code = fast_path(sys.argv[1:])
    if code is not None:
        raise SystemExit(code)
    only = server_command(sys.argv[1:])
    (get_app() if only is None else _build(only))()


if __name__ == "__main__":
    main()
