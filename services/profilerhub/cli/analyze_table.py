"""Rich tables for ``profilerhub analyze --format table``."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table


def _us(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"{v / 1e6:,.3f} s"
    if abs(v) >= 1e3:
        return f"{v / 1e3:,.3f} ms"
    return f"{v:,.3f} µs"


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def _short(name: str, width: int | None = 90) -> str:
    """``name`` cut to ``width`` characters (None: whole, for ``--wide``)."""
    return name if width is None or len(name) <= width else name[: width - 1] + "…"


class FitTable(Table):
    """A table that fits the width it is printed in (80 or 120 columns, a pipe's 160).

    When the columns' contents need more than the width, the columns named in ``drop`` are left
    out, in that order, until it fits (the caption names them); what still does not fit wraps.
    The first column (a kernel's name) gives way first: cut with an ellipsis, or, ``wide``,
    folded onto as many lines as the whole name needs.
    """

    def __init__(self, title: str, columns: tuple[str, ...], drop: tuple[str, ...] = (), wide: bool = False):
        super().__init__(title=title, title_justify="left", title_style="bold", caption_justify="left")
        self.drop = drop
        self.wide = wide
        for i, c in enumerate(columns):
            if i == 0:
                self.add_column(
                    c,
                    justify="left",
                    overflow="fold" if wide else "ellipsis",
                    no_wrap=not wide,
                    min_width=12,
                    max_width=None if wide else 70,
                )
            else:
                self.add_column(c, justify="right", no_wrap=True, min_width=min(len(c), 11))

    def _needs(self, index: int, name_width: int = 12) -> int:
        """Columns a column takes; the first (a name) may shrink to ``name_width``."""
        column = self.columns[index]
        cells = [len(str(cell)) for cell in column._cells]
        need = max([len(str(column.header)), *cells])
        return (min(need, name_width) if index == 0 else need) + 3

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        kept = list(range(len(self.columns)))
        left_out: list[str] = []
        for name in self.drop:  # columns go before a name is cut below 28 characters
            if sum(self._needs(i, 28) for i in kept) + 1 <= width:
                break
            index = next((i for i in kept if self.columns[i].header == name), None)
            if index is not None:
                kept.remove(index)
                left_out.append(name)
        others = sum(self._needs(i) for i in kept[1:]) + 1
        tight = others + self._needs(0) > width  # even a 12-wide name column does not fit: wrap numbers
        fitted = Table(title=self.title, title_justify="left", title_style="bold", caption_justify="left")
        for i in kept:
            c = self.columns[i]
            if i == 0 and not self.wide:  # as wide as is left over, the rest of a long name cut
                room = max(12, min(70, width - others - 3))
                longest = max([len(str(c.header)), *(len(str(x)) for x in c._cells)])
                fitted.add_column(c.header, overflow="ellipsis", no_wrap=True, width=min(room, longest))
            else:
                fitted.add_column(c.header, justify=c.justify, overflow=c.overflow, min_width=c.min_width,
                                  max_width=c.max_width, no_wrap=c.no_wrap and not tight)  # fmt: skip
        for row in zip(*(self.columns[i]._cells for i in kept), strict=True):
            fitted.add_row(*row)
        notes = [str(self.caption)] if self.caption else []
        if left_out:
            notes.append(f"not shown at this width: {', '.join(left_out)} (--format json has them)")
        fitted.caption = "\n".join(notes) or None
        yield from fitted.__rich_console__(console, options)


def _table(title: str, *columns: str, drop: tuple[str, ...] = (), wide: bool = False) -> FitTable:
    return FitTable(title, columns, drop, wide)


def output_console() -> Console:
    """The terminal's width; piped, ``$COLUMNS`` or 160 (a file or pager need not squeeze to 80)."""
    console = Console()
    if not console.is_terminal:
        columns = os.environ.get("COLUMNS", "")
        console = Console(width=int(columns) if columns.isdigit() else 160)
    return console


def render(result: dict[str, Any], console: Console | None = None, *, wide: bool = False) -> None:
    """Print an ``analyze`` result; ``wide`` shows kernel names whole (folded), not cut."""
    console = console or output_console()
    if "ranks" in result:
        _render_ranks(result, console)
        _render_one(result["aggregate"], console, title="All ranks", wide=wide)
        return
    _render_one(result, console, title=result.get("source") or "trace", wide=wide)


def _render_ranks(result: dict[str, Any], console: Console) -> None:
    t = _table(
        "Per rank",
        "trace",
        "rank",
        "events",
        "kernels",
        "GPU idle",
        "compute",
        "median step",
        drop=("events", "kernels"),
    )
    for r in result["ranks"]:
        idle = sum(x["idle_us"] for x in r["temporal"])
        comp = sum(x["compute_us"] for x in r["temporal"])
        steps = sorted(s["duration_us"] for s in r["steps"])
        t.add_row(
            r["source"],
            str(r["rank"]),
            f"{r['events']:,}",
            f"{r['kernel_count']:,}",
            _us(idle),
            _us(comp),
            _us(steps[len(steps) // 2] if steps else None),
        )
    console.print(t)
    for bad in result.get("unreadable", []):
        console.print(f"[yellow]skipped[/yellow] {bad['file']}: {bad['error']}", highlight=False)
    s = result["stragglers"]
    if s["stragglers"]:
        st = _table(
            f"Stragglers (> {s['threshold_pct']:.0f}% above the median)",
            "rank",
            "metric",
            "value",
            "median",
            "ratio",
        )
        for x in s["stragglers"]:
            st.add_row(str(x["rank"]), x["metric"], _us(x["value"]), _us(x["median"]), f"{x['ratio']:.2f}x")
        console.print(st)
    else:
        console.print(f"No stragglers (no rank > {s['threshold_pct']:.0f}% above the median).")


def _render_one(r: dict[str, Any], console: Console, title: str, wide: bool = False) -> None:
    kinds = r["kernel_kinds"]
    gpu_total = sum(kinds.values())
    console.print(f"[bold]{title}[/bold]: {r['events']:,} events", highlight=False)
    if r.get("skipped_events"):
        console.print(f"[yellow]skipped events:[/yellow] {r['skipped_events']}", highlight=False)
    if not r["kernels"] and not gpu_total:
        console.print("No GPU work in this trace (CPU-only profile).")
    else:
        t = _table(
            "Top kernels",
            "kernel",
            "count",
            "total",
            "mean",
            "min",
            "max",
            "share",
            drop=("min", "max", "mean"),
            wide=wide,
        )
        ktotal = r.get("kernel_time_us") or sum(k["total_us"] for k in r["kernels"])
        for k in r["kernels"]:
            t.add_row(
                _short(k["name"], None if wide else 90),
                f"{k['count']:,}",
                _us(k["total_us"]),
                _us(k["mean_us"]),
                _us(k.get("min_us")),
                _us(k.get("max_us")),
                _pct(k["total_us"], ktotal),
            )
        console.print(t)
        t = _table("GPU time by kind (sum of op durations)", "kind", "time", "share")
        for key, label in (
            ("compute_us", "compute"),
            ("communication_us", "communication"),
            ("memory_us", "memory"),
        ):
            t.add_row(label, _us(kinds[key]), _pct(kinds[key], gpu_total))
        console.print(t)
    lat = r["launch_latency"]
    if lat["count"]:
        t = _table(
            "Kernel launch latency",
            "launches",
            "mean",
            "p50",
            "p95",
            "max",
            "GPU ops without launch",
            drop=("p50", "max"),
        )
        t.add_row(
            f"{lat['count']:,}",
            _us(lat["mean_us"]),
            _us(lat["p50_us"]),
            _us(lat["p95_us"]),
            _us(lat["max_us"]),
            f"{lat['unmatched_gpu_ops']:,}",
        )
        console.print(t)
    if r["temporal"]:
        t = _table("Temporal breakdown", "device", "span", "idle", "compute", "non-compute")
        for x in r["temporal"]:
            dev = f"rank {x['rank']} GPU {x['device']}" if "rank" in x else f"GPU {x['device']}"
            t.add_row(
                dev,
                _us(x["span_us"]),
                f"{_us(x['idle_us'])} ({_pct(x['idle_us'], x['span_us'])})",
                f"{_us(x['compute_us'])} ({_pct(x['compute_us'], x['span_us'])})",
                f"{_us(x['non_compute_us'])} ({_pct(x['non_compute_us'], x['span_us'])})",
            )
        console.print(t)
    if r.get("idle_breakdown"):
        t = _table("Idle time per stream", "device/stream", "idle", "host wait", "kernel wait", "other")
        for x in r["idle_breakdown"]:
            t.add_row(
                f"GPU {x['device']} stream {x['stream']}",
                _us(x["idle_us"]),
                _us(x["host_wait_us"]),
                _us(x["kernel_wait_us"]),
                _us(x["other_us"]),
            )
        console.print(t)
    if r["memory_ops"]:
        t = _table("Memory operations", "kind", "count", "time", "bytes", "bandwidth")
        for m in r["memory_ops"]:
            bw = m.get("bandwidth_gbps")
            nbytes = "-" if m["bytes"] is None else f"{m['bytes']:,}"
            t.add_row(
                m["kind"],
                f"{m['count']:,}",
                _us(m["total_us"]),
                nbytes,
                "-" if bw is None else f"{bw:.1f} GB/s",
            )
        console.print(t)
    if r["sync_ops"]:
        t = _table("Synchronisation", "call", "side", "count", "total", "max")
        for s in r["sync_ops"]:
            t.add_row(s["name"], s["side"], f"{s['count']:,}", _us(s["total_us"]), _us(s["max_us"]))
        console.print(t)
    if r.get("precision"):
        t = _table("Kernel precision (guessed from names)", "precision", "kernels", "time", "share")
        for p in r["precision"]:
            t.add_row(p["precision"], f"{p['count']:,}", _us(p["total_us"]), f"{p['pct']:.1f}%")
        console.print(t)
    steps = r["steps"]
    if steps and "kernel_us" in steps[0]:
        t = _table(
            "Steps",
            "step",
            "duration",
            "kernel",
            "memcpy/memset",
            "sync",
            "CPU only",
            drop=("sync", "memcpy/memset"),
        )
        for s in steps[:50]:
            t.add_row(
                str(s["step"]),
                _us(s["duration_us"]),
                _us(s["kernel_us"]),
                _us(s["memory_us"]),
                _us(s["sync_us"]),
                _us(s["cpu_only_us"]),
            )
        if len(steps) > 50:
            t.caption = f"first 50 of {len(steps)} steps"
        console.print(t)
    elif steps:
        t = _table("Steps (across ranks)", "step", "ranks", "slowest rank", "mean")
        for s in steps[:50]:
            t.add_row(str(s["step"]), str(s["ranks"]), _us(s["max_duration_us"]), _us(s["mean_duration_us"]))
        console.print(t)
