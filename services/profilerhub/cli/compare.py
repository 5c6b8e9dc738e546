"""``profilerhub compare BASE TEST``: what changed between two runs (traces or job directories)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from profilerhub.cli.analyze import OutputFormat, _fail, parse_size
from profilerhub.cli.toolkit import require

DEFAULT_TABLE_TOP = 20


def _profile(path: Path, max_bytes: int | None) -> dict[str, Any]:
    """One run: a trace file, or every trace under a directory (one per rank)."""
    from profilerhub_analysis.build import load_trace
    from profilerhub_analysis.compare import merge_op_totals, op_totals, profile
    from profilerhub_analysis.errors import TraceFormatError
    from profilerhub_analysis.ranks import find_traces
    from profilerhub_analysis.report import analyze_store

    if not path.exists():
        raise _fail(f"{path}: no such file or directory")
    traces = find_traces(path) if path.is_dir() else [path]
    if not traces:
        raise _fail(f"{path}: no trace files (*.json, *.json.gz) in this directory")
    reports, ops, unreadable = [], [], []
    for trace in traces:
        try:
            store = load_trace(trace, max_bytes)
        except TraceFormatError as exc:
            if not path.is_dir():
                raise
            unreadable.append(exc.message)  # job.json, summary.json...: not traces
            continue
        reports.append(analyze_store(store))
        ops.append(op_totals(store))
        del store
    if not reports:
        raise _fail(f"{path}: no readable trace among {len(unreadable)} files; first error: {unreadable[0]}")
    return profile(reports, ops[0] if len(ops) == 1 else merge_op_totals(ops))


def compare(
    base: Path = typer.Argument(
        ..., help="The baseline: a trace (.json/.json.gz) or a job directory of traces."
    ),
    test: Path = typer.Argument(..., help="The run to compare with it, likewise."),
    output: OutputFormat = typer.Option(OutputFormat.table, "--format", "-f", help="table or json."),
    top: int = typer.Option(DEFAULT_TABLE_TOP, "--top", "-n", min=1, help="Rows per table (table output)."),
    max_size: str | None = typer.Option(
        None, "--max-size", help="Largest decompressed trace to load, e.g. 4G."
    ),
) -> None:
    """Compare two runs: step time, GPU utilisation, idle, kernel and op time with deltas by impact."""
    require("profilerhub_analysis.compare", "analysis")
    import orjson

    from profilerhub_analysis.compare import compare as compare_profiles
    from profilerhub_analysis.errors import TraceError

    max_bytes = parse_size(max_size) if max_size else None
    try:
        result = compare_profiles(_profile(base, max_bytes), _profile(test, max_bytes))
    except TraceError as exc:
        raise _fail(exc.message) from None
    if output is OutputFormat.json:
        sys.stdout.buffer.write(orjson.dumps(result, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
        sys.stdout.flush()
        return
    render(result["compare"], top)


def render(c: dict[str, Any], top: int) -> None:
    from profilerhub.cli.analyze_table import _short, _table, _us, output_console

    console = output_console()
    console.print(f"[bold]base[/bold] {c['base']['source']}\n[bold]test[/bold] {c['test']['source']}")

    def num(metric: str, v: Any) -> str:
        if v is None:
            return "-"
        if metric.endswith("_us"):
            return _us(v)
        if metric.endswith("_pct"):
            return f"{v:.1f}%"
        return f"{v:,}" if isinstance(v, int) else f"{v:,.3f}"

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:+.1f}%"

    t = _table("Summary", "metric", "base", "test", "delta", "change")
    for row in c["summary"]:
        m = row["metric"]
        t.add_row(m, num(m, row["base"]), num(m, row["test"]), num(m, row["diff"]), pct(row["pct"]))
    console.print(t)
    for title, rows in (("Kernels by impact", c["kernels"]), ("Ops by impact", c["ops"])):
        if not rows:
            continue
        t = _table(
            title,
            "name",
            "base count",
            "test count",
            "base time",
            "test time",
            "delta",
            "change",
            drop=("base count", "test count"),
        )
        for r in rows[:top]:
            t.add_row(
                _short(r["name"], 70),
                f"{r['base_count']:,}",
                f"{r['test_count']:,}",
                _us(r["base_total_us"]),
                _us(r["test_total_us"]),
                ("+" if r["diff_total_us"] > 0 else "") + _us(r["diff_total_us"]),
                pct(r["pct"]),
            )
        console.print(t)
    for label, names in (("Only in test", c["added"]), ("Only in base", c["removed"])):
        if names:
            shown = ", ".join(_short(n, 60) for n in names[:top])
            more = f" (+{len(names) - top} more)" if len(names) > top else ""
            console.print(f"[bold]{label}[/bold] ({len(names)}): {shown}{more}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
