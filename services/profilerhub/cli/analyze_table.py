"""Rich tables for ``profilerhub analyze --format table``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
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


def _short(name: str, width: int = 90) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _table(title: str, *columns: str) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold")
    for i, c in enumerate(columns):
        if i == 0:
            t.add_column(c, justify="left", overflow="ellipsis", no_wrap=True, min_width=12, max_width=70)
        else:
            t.add_column(c, justify="right", no_wrap=True, min_width=max(len(c), 11))
    return t


def render(result: dict[str, Any], console: Console | None = None) -> None:
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=160)  # piped into a file or pager: don't squeeze to 80 columns
    if "ranks" in result:
        _render_ranks(result, console)
        _render_one(result["aggregate"], console, title="All ranks")
        return
    _render_one(result, console, title=result.get("source") or "trace")


def _render_ranks(result: dict[str, Any], console: Console) -> None:
    t = _table("Per rank", "trace", "rank", "events", "kernels", "GPU idle", "compute", "median step")
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


def _render_one(r: dict[str, Any], console: Console, title: str) -> None:
    kinds = r["kernel_kinds"]
    gpu_total = sum(kinds.values())
    console.print(f"[bold]{title}[/bold]: {r['events']:,} events", highlight=False)
    if r.get("skipped_events"):
        console.print(f"[yellow]skipped events:[/yellow] {r['skipped_events']}", highlight=False)
    if not r["kernels"] and not gpu_total:
        console.print("No GPU work in this trace (CPU-only profile).")
    else:
        t = _table("Top kernels", "kernel", "count", "total", "mean", "min", "max", "share")
        ktotal = r.get("kernel_time_us") or sum(k["total_us"] for k in r["kernels"])
        for k in r["kernels"]:
            t.add_row(
                _short(k["name"]),
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
        t = _table("Kernel launch latency", "launches", "mean", "p50", "p95", "max", "GPU ops without launch")
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
        t = _table("Steps", "step", "duration", "kernel", "memcpy/memset", "sync", "CPU only")
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
