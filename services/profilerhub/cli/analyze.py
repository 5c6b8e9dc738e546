"""``profilerhub analyze``: where the GPU time went in a PyTorch-profiler trace."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from profilerhub.cli.toolkit import err_console, require


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


DEFAULT_TABLE_TOP = 15


def parse_size(text: str) -> int:
    """``"512M"``, ``"4G"``, ``"1073741824"`` -> bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    try:
        if t and t[-1] in units:
            return int(float(t[:-1]) * units[t[-1]])
        return int(t)
    except ValueError as exc:
        raise typer.BadParameter(f"not a size: {text!r} (try 512M or 4G)") from exc


def _fail(message: str) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(2)


def analyze(
    path: Path = typer.Argument(..., help="A trace (.json or .json.gz), or a directory of per-rank traces."),
    output: OutputFormat = typer.Option(
        OutputFormat.table, "--format", "--output", "-f", "-o", help="table (fitted to the terminal) or json."
    ),
    top: int | None = typer.Option(
        None,
        "--top",
        "-n",
        min=1,
        metavar="N",
        show_default=f"{DEFAULT_TABLE_TOP} in a table, all in json",
        help="Keep only the N kernels with the most time.",
    ),
    max_size: str | None = typer.Option(
        None,
        "--max-size",
        show_default="4G, or PROFILERHUB_ANALYSIS_MAX_TRACE_BYTES",
        help="Largest decompressed trace to load, e.g. 512M or 16G.",
    ),
    wide: bool = typer.Option(False, "--wide", help="Show kernel names whole (folded), not cut."),
) -> None:
    """Analyse PyTorch profiler traces: kernels, launch latency, idle time, memory copies, sync, steps."""
    require("profilerhub_analysis.report", "analysis")
    require("orjson", "analysis")
    import orjson

    from profilerhub_analysis.errors import TraceError
    from profilerhub_analysis.ranks import find_traces
    from profilerhub_analysis.report import analyze_file

    max_bytes = parse_size(max_size) if max_size else None
    if output is OutputFormat.table and top is None:
        top = DEFAULT_TABLE_TOP
    if not path.exists():
        raise _fail(f"{path}: no such file or directory")
    try:
        result: dict[str, Any]
        if path.is_dir():
            traces = find_traces(path)
            if not traces:
                raise _fail(f"{path}: no trace files (*.json, *.json.gz) in this directory")
            result = _analyze_dir(traces, top, max_bytes)
        else:
            with _spinner(f"Reading {path.name}"):
                result = analyze_file(path, top=top, max_bytes=max_bytes)
    except typer.Exit:
        raise
    except TraceError as exc:
        raise _fail(exc.message) from None
    except MemoryError:
        raise _fail(f"{path}: out of memory while loading; use a machine with more memory") from None
    except Exception as exc:  # a bug, not bad input: one line unless asked for the traceback
        if os.environ.get("PROFILERHUB_DEBUG"):
            raise
        err_console.print(
            f"[red]error:[/red] unexpected failure analysing {path}: {type(exc).__name__}: {exc} "
            "(set PROFILERHUB_DEBUG=1 for the traceback and please report it)",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1) from None

    if output is OutputFormat.json:
        sys.stdout.buffer.write(orjson.dumps(result, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
        sys.stdout.flush()
        return
    from profilerhub.cli.analyze_table import render

    render(result, wide=wide)


def _spinner(text: str) -> Any:
    from contextlib import nullcontext

    if not err_console.is_terminal:
        return nullcontext()
    return err_console.status(text)


def _analyze_dir(traces: list[Path], top: int | None, max_bytes: int | None) -> dict[str, Any]:
    from profilerhub_analysis.ranks import analyze_directory

    if not err_console.is_terminal:
        return analyze_directory(traces, top=top, max_bytes=max_bytes)
    from rich.progress import Progress

    with Progress(console=err_console, transient=True) as progress:
        task = progress.add_task("Analysing ranks", total=len(traces))

        def step(p: Path) -> None:
            progress.update(task, advance=1, description=f"Analysing {p.name}")

        return analyze_directory(traces, top=top, max_bytes=max_bytes, progress=step)


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze)
