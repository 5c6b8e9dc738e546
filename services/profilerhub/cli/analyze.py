"""``profilerhub analyze``: where the GPU time went in a PyTorch-profiler trace.

The typer command; what it runs is :func:`profilerhub.cli.analyze_run.run`, which the entry point
also reaches directly for a plain ``analyze`` (see that module) without building the typer app.
"""

from __future__ import annotations

from pathlib import Path

import typer

from profilerhub.cli.analyze_run import DEFAULT_TABLE_TOP, OutputFormat, fail, run, size_bytes
from profilerhub.cli.toolkit import require


def parse_size(text: str) -> int:
    """``"512M"``, ``"4G"``, ``"1073741824"`` -> bytes."""
    try:
        return size_bytes(text)
    except ValueError as exc:
        raise typer.BadParameter(f"not a size: {text!r} (try 512M or 4G)") from exc


def _fail(message: str) -> typer.Exit:
    return typer.Exit(fail(message).code)


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
    max_bytes = parse_size(max_size) if max_size else None
    code = run(path, output, top, max_bytes, wide)
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze)


__all__ = ["DEFAULT_TABLE_TOP", "OutputFormat", "analyze", "parse_size", "register"]
