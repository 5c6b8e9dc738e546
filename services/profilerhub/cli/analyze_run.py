"""What ``profilerhub analyze`` does, without typer, and the entry point's fast path to it.

Analysing a folder of small traces one process each is dominated by start-up, and building the
whole ``profilerhub`` typer app (typer's pydantic adapters, every command module, the entry-point
metadata) costs more than the analysis. So ``profilerhub.cli.main.main`` first offers its
arguments to :func:`fast_path`: when they are ``analyze`` with only the options this module
understands, well formed, it runs the analysis here and returns the exit code; anything else
(``--help``, an unknown or repeated option, a value typer would reject or word differently)
returns ``None`` and the full app parses it, so usage errors and help read as they always did.
The analysis itself (``run``) is the one the typer command calls: same output, byte for byte.

Standard library only at import; rich is imported only to print an error or draw a progress
display on a terminal, the analysis engine (numpy) only when a trace is read.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


DEFAULT_TABLE_TOP = 15
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size_bytes(text: str) -> int:
    """``"512M"``, ``"4G"``, ``"1073741824"`` -> bytes; ``ValueError`` when it is not a size."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    if t and t[-1] in _UNITS:
        return int(float(t[:-1]) * _UNITS[t[-1]])
    return int(t)


def _err_console() -> Any:
    from profilerhub.cli.console import err_console

    return err_console


def _stderr_may_be_terminal() -> bool:
    """False only where rich's ``Console(stderr=True).is_terminal`` is surely False too (stderr not
    a tty and none of the variables that force it), so the common case does not import rich."""
    forced = ("FORCE_TERMINAL", "TTY_COMPATIBLE", "FORCE_COLOR", "TTY_INTERACTIVE")
    return sys.stderr.isatty() or any(name in os.environ for name in forced)


class Failed(Exception):
    """The command ends with ``code``; its message, if any, is printed already."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def fail(message: str) -> Failed:
    _err_console().print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    return Failed(2)


def run(path: Path, output: OutputFormat, top: int | None, max_bytes: int | None, wide: bool) -> int:
    """Analyse ``path`` (a trace or a directory of per-rank traces) and print it; the exit code."""
    from profilerhub_analysis.errors import TraceError
    from profilerhub_analysis.report import analyze_file

    if output is OutputFormat.table and top is None:
        top = DEFAULT_TABLE_TOP
    try:
        if not path.exists():
            raise fail(f"{path}: no such file or directory")
        result: dict[str, Any]
        if path.is_dir():
            from profilerhub_analysis.ranks import find_traces

            traces = find_traces(path)
            if not traces:
                raise fail(f"{path}: no trace files (*.json, *.json.gz) in this directory")
            result = _analyze_dir(traces, top, max_bytes)
        else:
            with _spinner(f"Reading {path.name}"):
                result = analyze_file(path, top=top, max_bytes=max_bytes)
    except Failed as exc:
        return exc.code
    except TraceError as exc:
        return fail(exc.message).code
    except MemoryError:
        return fail(f"{path}: out of memory while loading; use a machine with more memory").code
    except Exception as exc:  # a bug, not bad input: one line unless asked for the traceback
        if os.environ.get("PROFILERHUB_DEBUG"):
            raise
        _err_console().print(
            f"[red]error:[/red] unexpected failure analysing {path}: {type(exc).__name__}: {exc} "
            "(set PROFILERHUB_DEBUG=1 for the traceback and please report it)",
            highlight=False,
            soft_wrap=True,
        )
        return 1

    if output is OutputFormat.json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(result, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
        sys.stdout.flush()
        return 0
    from profilerhub.cli.analyze_tb import render

    render(result, wide=wide)
    return 0


def _spinner(text: str) -> Any:
    from contextlib import nullcontext

    if not _stderr_may_be_terminal() or not _err_console().is_terminal:
        return nullcontext()
    return _err_console().status(text)


def _analyze_dir(traces: list[Path], top: int | None, max_bytes: int | None) -> dict[str, Any]:
    from profilerhub_analysis.ranks import analyze_directory

    if not _stderr_may_be_terminal() or not _err_console().is_terminal:
        return analyze_directory(traces, top=top, max_bytes=max_bytes)
    from rich.progress import Progress

    with Progress(console=_err_console(), transient=True) as progress:
        task = progress.add_task("Analysing ranks", total=len(traces))

        def step(p: Path) -> None:
            progress.update(task, advance=1, description=f"Analysing {p.name}")

        return analyze_directory(traces, top=top, max_bytes=max_bytes, progress=step)


# option spellings -> (name, takes a value); what typer's ``analyze`` declares, nothing more.
_OPTIONS = {
    "--format": ("output", True),
    "--output": ("output", True),
    "-f": ("output", True),
    "-o": ("output", True),
    "--top": ("top", True),
    "-n": ("top", True),
    "--max-size": ("max_size", True),
    "--wide": ("wide", False),
}
_COUNT = re.compile(r"[0-9]+")


def _parse(args: Sequence[str]) -> dict[str, Any] | None:
    """The options of ``analyze ARGS`` when every one is plainly valid; else None (typer decides)."""
    seen: dict[str, Any] = {}
    paths: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            paths.append(arg)
            continue
        flag, eq, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        known = _OPTIONS.get(flag)
        if known is None:
            return None  # --help, --, -fjson, a typo...: typer's message
        name, takes_value = known
        if name in seen:
            return None
        if not takes_value:
            if eq:
                return None
            seen[name] = True
            continue
        if eq:
            value = attached
        elif i < len(args):
            value, i = args[i], i + 1
        else:
            return None
        seen[name] = value
    if len(paths) != 1 or not paths[0]:
        return None
    output = seen.get("output", "table")
    if output not in OutputFormat.__members__:
        return None
    top = seen.get("top")
    if top is not None:
        if not _COUNT.fullmatch(top) or int(top) < 1:
            return None
        top = int(top)
    max_bytes = None
    if seen.get("max_size"):
        try:
            max_bytes = size_bytes(seen["max_size"])
        except ValueError:
            return None
    return {
        "path": Path(paths[0]),
        "output": OutputFormat(output),
        "top": top,
        "max_bytes": max_bytes,
        "wide": bool(seen.get("wide")),
    }


def _analysis_installed() -> bool:
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in ("numpy", "msgspec", "orjson"))


def fast_path(argv: Sequence[str], run_command: Callable[..., int] = run) -> int | None:
    """The exit code of ``profilerhub ARGV`` when it is a plain ``analyze``, run without building
    the typer app; ``None`` when the full app should parse ``argv``."""
    if not argv or argv[0] != "analyze":
        return None
    options = _parse(argv[1:])
    if options is None or not _analysis_installed():
        return None  # typer's usage message, or require()'s "install the analysis extra"
    try:
        return run_command(**options)
    except KeyboardInterrupt:
        print("\nAborted!", file=sys.stderr)  # as click says it
        return 1
    except BrokenPipeError:  # `profilerhub analyze t.json | head`: as click does, quietly
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter's exit flush goes here
        return 1


__all__ = ["DEFAULT_TABLE_TOP", "Failed", "OutputFormat", "fail", "fast_path", "run", "size_bytes"]
