"""``--output table|json`` for the terminal commands: tables that fit the terminal, or plain JSON.

A table names its columns with a priority; when the terminal is narrower than all of them need,
the lowest-priority columns are left out (the caption says which, and ``--output json`` has
everything). Columns that stay may fold long values rather than cut them, so an id can still be
copied whole. Piped output (no terminal) is laid out for 120 columns, or ``$COLUMNS``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

PIPED_WIDTH = 120


class Output(StrEnum):
    table = "table"
    json = "json"


OutputOption = Annotated[
    Output,
    typer.Option(
        "--output", "-o", envvar="PROFILERHUB_OUTPUT", help="table (for people) or json (for scripts)."
    ),
]


@dataclass(frozen=True)
class Column:
    """One column: ``key`` into the item (or ``value`` to compute it), shown under ``header``.

    ``priority`` 0 is never dropped; higher numbers go first when the terminal is narrow.
    ``width`` is the least it needs; ``fold`` wraps a long value instead of cutting it.
    """

    header: str
    key: str = ""
    priority: int = 0
    width: int = 8
    fold: bool = False
    value: Callable[[dict[str, Any]], Any] | None = None

    def cell(self, item: dict[str, Any]) -> str:
        raw = self.value(item) if self.value else item.get(self.key)
        return show(raw)


def show(value: Any) -> str:
    """A value as a table shows it: times to the minute in UTC, lists joined, none as ``-``."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(show(v) for v in value) or "-"
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == "T":
        try:
            return datetime.fromisoformat(value).strftime("%Y-%m-%d %H:%M")
        except ValueError:
            return value
    return str(value)


def console() -> Console:
    out = Console(highlight=False, soft_wrap=False)
    if not out.is_terminal:
        import os

        columns = os.environ.get("COLUMNS", "")
        out = Console(highlight=False, width=int(columns) if columns.isdigit() else PIPED_WIDTH)
    return out


def fit(columns: Sequence[Column], width: int) -> tuple[list[Column], list[Column]]:
    """The columns that fit in ``width`` (highest priority first kept), and those left out."""
    kept = list(columns)
    dropped: list[Column] = []

    def need(cols: Sequence[Column]) -> int:
        return sum(c.width + 3 for c in cols) + 1  # a cell's padding and border

    while need(kept) > width:
        worst = max((c for c in kept if c.priority > 0), key=lambda c: c.priority, default=None)
        if worst is None:
            break
        kept.remove(worst)
        dropped.append(worst)
    return kept, dropped


def table(
    items: Iterable[dict[str, Any]],
    columns: Sequence[Column],
    *,
    title: str = "",
    empty: str = "none",
    out: Console | None = None,
    caption: str = "",
) -> None:
    """Print ``items`` as a table of the columns that fit the terminal."""
    out = out or console()
    rows = list(items)
    if not rows:
        out.print(f"[dim]{empty}[/dim]")
        return
    kept, dropped = fit(columns, out.width)
    t = Table(title=title or None, title_justify="left", title_style="bold", caption_justify="left")
    for c in kept:
        t.add_column(
            c.header,
            min_width=min(c.width, len(c.header)) if c.fold else c.width,
            overflow="fold" if c.fold else "ellipsis",
            no_wrap=not c.fold,
        )
    for item in rows:
        t.add_row(*(c.cell(item) for c in kept))
    notes = [caption] if caption else []
    if dropped:
        names = ", ".join(c.header for c in dropped)
        notes.append(f"not shown at this width: {names} (--output json has every field)")
    t.caption = "\n".join(notes) or None
    out.print(t)


def details(
    item: dict[str, Any], fields: Sequence[tuple[str, str]], *, title: str = "", out: Console | None = None
) -> None:
    """One resource as ``label  value`` lines (``fields``: (label, key); nested keys with dots)."""
    out = out or console()
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")
    for label, key in fields:
        value: Any = item
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        t.add_row(label, show(value))
    if title:
        out.print(f"[bold]{title}[/bold]")
    out.print(t)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


def emit(data: Any, output: Output, as_table: Callable[[], None]) -> None:
    """JSON of ``data``, or ``as_table()``."""
    if output is Output.json:
        emit_json(data)
    else:
        as_table()


__all__ = [
    "Column",
    "Output",
    "OutputOption",
    "console",
    "details",
    "emit",
    "emit_json",
    "fit",
    "show",
    "table",
]
