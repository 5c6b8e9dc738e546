"""Rich tables of the TensorBoard plugin's views (``tb_*`` keys) for ``profilerhub analyze``."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from profilerhub.cli.analyze_table import _pct, _short, _table, _us, output_console
from profilerhub.cli.analyze_table import render as render_analyses

TOP = 10
_ROLES = (
    ("kernel_us", "Kernel"),
    ("memcpy_us", "Memcpy"),
    ("memset_us", "Memset"),
    ("communication_us", "Communication"),
    ("runtime_us", "Runtime"),
    ("dataloader_us", "DataLoader"),
    ("cpu_exec_us", "CPU Exec"),
    ("other_us", "Other"),
)


def render(result: dict[str, Any], console: Console | None = None, *, wide: bool = False) -> None:
    """Print an ``analyze`` result: every analysis, then (for one trace) the plugin's views."""
    console = console or output_console()
    render_analyses(result, console, wide=wide)
    if "ranks" not in result:
        render_tb(result, console, wide)


def render_tb(r: dict[str, Any], console: Console, wide: bool = False) -> None:
    """The step-time overview, the top operators, the kernels' launch figures and the modules, when
    present."""
    overview = r.get("tb_overview")
    if overview:
        avg = overview["average"]
        n = overview["kept_steps"]
        t = _table(f"Step time by role (mean of {n} step{'' if n == 1 else 's'})", "role", "time", "share")
        for key, label in _ROLES:
            t.add_row(label, _us(avg[key]), _pct(avg[key], avg["total_us"]))
        t.add_row("step", _us(avg["total_us"]), "100.0%")
        console.print(t)
    for g in r.get("tb_gpu_summary") or []:
        console.print(
            f"GPU {g['device']}: utilization {_num(g['gpu_utilization_pct'])}, "
            f"est. SM efficiency {_num(g['sm_efficiency_pct'])}, "
            f"est. achieved occupancy {_num(g['achieved_occupancy_pct'])}, "
            f"tensor cores {_num(g['tensor_core_kernel_pct'])} of kernel time",
            highlight=False,
        )
    for advice in recommendations(r):
        console.print(
            f"[bold]recommendation[/bold] ({advice['rule']}): {advice['message']}. "
            f"{advice['recommendation']}",
            highlight=False,
        )
    for note in r.get("tb_notes") or []:
        console.print(f"[yellow]note:[/yellow] {note}", highlight=False)
    ops = r.get("tb_operators") or []
    if ops:
        t = _table(
            "Top operators",
            "operator",
            "calls",
            "device self",
            "device total",
            "host self",
            "host total",
            "TC eligible",
            drop=("host total", "device total", "TC eligible"),
            wide=wide,
        )
        for o in ops[:TOP]:
            t.add_row(
                _short(o["name"], None if wide else 90),
                f"{o['calls']:,}",
                _us(o["device_self_us"]),
                _us(o["device_total_us"]),
                _us(o["host_self_us"]),
                _us(o["host_total_us"]),
                "yes" if o["tc_eligible"] else "no",
            )
        if len(ops) > TOP:
            t.caption = f"top {TOP} of {len(ops)} operators (--format json has all, and by input shape)"
        console.print(t)
    kernels = r.get("tb_kernels") or []
    if kernels:
        t = _table(
            "Kernels: launch figures",
            "kernel",
            "calls",
            "total",
            "blocks/SM",
            "occupancy",
            "tensor cores",
            drop=("blocks/SM",),
            wide=wide,
        )
        for k in kernels[:TOP]:
            t.add_row(
                _short(k["name"], None if wide else 90),
                f"{k['calls']:,}",
                _us(k["total_us"]),
                "-" if k["blocks_per_sm"] is None else f"{k['blocks_per_sm']:.2f}",
                _num(k["occupancy_pct"]),
                "yes" if k["tensor_cores"] else "no",
            )
        console.print(t)
    render_modules(r.get("tb_modules") or [], console)


def render_modules(roots: list[dict[str, Any]], console: Console) -> None:
    """The module view as an indented tree (traces recorded with stacks and modules)."""
    if not roots:
        return
    t = _table("Modules (time per nn.Module)", "module", "calls", "operators", "host total", "host self",
               "device total", "mean")  # fmt: skip
    todo = [(root, 0) for root in reversed(roots)]
    while todo:
        m, depth = todo.pop()
        t.add_row(
            "  " * depth + m["name"],
            f"{m['calls']:,}",
            f"{m['operators']:,}",
            _us(m["host_total_us"]),
            _us(m["host_self_us"]),
            _us(m["device_total_us"]),
            _us(m["mean_us"]),
        )
        todo.extend((c, depth + 1) for c in reversed(m["children"]))
    console.print(t)


def recommendations(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The plugin's recommendations for this trace (the rules engine's, imported here: the SDK's
    CLI reaches the analysis package only inside commands)."""
    if r.get("tb_facts") is None:
        return []
    from profilerhub_analysis.rules.tb_recommendations import brief, recommend

    return recommend(brief(r))


def _num(pct: float | None) -> str:
    return "-" if pct is None else f"{pct:.1f}%"
