"""A job's profiling report as one self-contained HTML page (SageMaker Debugger's sections).

``render_report(summary, rules, series, tensors)`` is pure: the job's summary
(``processed/summary.json``), its rule results (``processed/rules.json``), full-resolution series
(``processed/series.npz``) and ``ph.watch`` reductions (``processed/tensors.npz``, for the
"Model" section: the model rules' findings with their step ranges, the losses by mode and the
gradient norms per layer over steps) in, a string out. Plots are inline SVG; there is no script,
no external resource, one ``<style>`` element: the file reads the same offline, saved from the
API or the app.
Every figure comes from the summary, the rules or the series; nothing is recomputed here but
quantiles of the series shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

import numpy as np

from profilerhub_analysis.rules.model import MEMBERS as MODEL_RULES
from profilerhub_analysis.series import JobSeries
from profilerhub_analysis.tensors import TensorTable

SECTIONS = (
    ("summary", "Training job summary"),
    ("system", "System usage statistics"),
    ("framework", "Framework metrics summary"),
    ("rules", "Rules summary"),
    ("steps", "Step durations"),
    ("gpu", "GPU utilisation"),
    ("batch", "Batch size"),
    ("cpu", "CPU bottlenecks"),
    ("io", "I/O bottlenecks"),
    ("balance", "Load balancing"),
    ("memory", "GPU memory"),
    ("model", "Model"),
)
RULE_OF_SECTION = {
    "steps": "StepOutlier",
    "gpu": "LowGPUUtilization",
    "batch": "BatchSize",
    "cpu": "CPUBottleneck",
    "io": "IOBottleneck",
    "balance": "LoadBalancing",
    "memory": "GPUMemoryIncrease",
}
PLOT_POINTS = 400
W, H, PAD = 720, 180, 36
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .6em;text-align:left}
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
.IssuesFound{color:#b00020;font-weight:600}.NoIssuesFound{color:#1b5e20}.Error{color:#8a6d00}.NoData{color:#666}
.InProgress{color:#555}.note{color:#555}svg{background:#fafafa;border:1px solid #eee}
"""


def _num(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.3f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    return escape(str(v))


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    if not rows:
        return '<p class="note">No data.</p>'
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(
            f'<td class="n">{_num(c)}</td>' if isinstance(c, int | float) and not isinstance(c, bool)
            else f"<td>{c if isinstance(c, Markup) else escape(str(c))}</td>"
            for c in row
        ) + "</tr>"
        for row in rows
    )  # fmt: skip
    return f"<table><tr>{th}</tr>{body}</table>"


class Markup(str):
    """Text already escaped (a status badge)."""


def _job_status(rules: dict[str, Any] | None) -> tuple[str, bool]:
    """The job's rules status, and whether it is an Error only for want of data (every rule's)."""
    results = (rules or {}).get("rules") or []
    short = bool(results) and all(r.get("missing_data") for r in results)
    return (rules or {}).get("status", "InProgress"), short


def _badge(status: str, missing_data: bool = False) -> Markup:
    """A status word; a rule short of data reads "No data" (grey) instead of an alarming Error."""
    if status == "Error" and missing_data:
        return Markup('<span class="NoData">No data</span>')
    return Markup(f'<span class="{escape(status)}">{escape(status)}</span>')


def line_plot(
    title: str, lines: Mapping[Any, tuple[Any, Any]], unit: str = "", t0: float = 0, x_unit: str = "s"
) -> str:
    """An inline SVG of ``{label: (t_seconds, values)}``, at most ``PLOT_POINTS`` per line
    (``x_unit``: what x counts, ``"step"`` for the model section)."""
    plotted = {str(k): (np.asarray(t, float), np.asarray(v, float)) for k, (t, v) in lines.items() if len(t)}
    if not plotted:
        return f'<p class="note">{escape(title)}: no data.</p>'
    ts = np.concatenate([t for t, _ in plotted.values()])
    vs = np.concatenate([v[np.isfinite(v)] for _, v in plotted.values()] or [np.zeros(1)])
    x0, x1 = float(ts.min()), float(ts.max()) or 1.0
    y0, y1 = min(0.0, float(vs.min()) if len(vs) else 0.0), float(vs.max()) if len(vs) else 1.0
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}"'
    parts = [svg + ' role="img">',
             f"<title>{escape(title)}</title>"]  # fmt: skip
    for i, (label, (t, v)) in enumerate(plotted.items()):
        keep = np.unique(np.linspace(0, len(t) - 1, min(len(t), PLOT_POINTS)).round().astype(int))
        t, v = t[keep], v[keep]
        ok = np.isfinite(v)
        px = PAD + (t[ok] - x0) / (x1 - x0) * (W - 2 * PAD)
        py = H - PAD + 10 - (v[ok] - y0) / (y1 - y0) * (H - 2 * PAD)
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px.tolist(), py.tolist(), strict=True))
        colour = COLOURS[i % len(COLOURS)]
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.2" points="{pts}"/>')
        parts.append(
            f'<text x="{W - PAD - 150}" y="{14 + 13 * i}" font-size="11" fill="{colour}">'
            f"{escape(label)}</text>"
        )
    parts.append(f'<text x="4" y="14" font-size="11">{_num(y1)} {escape(unit)}</text>')
    parts.append(f'<text x="4" y="{H - PAD + 10}" font-size="11">{_num(y0)}</text>')
    xu = escape(x_unit)
    parts.append(f'<text x="{PAD}" y="{H - 6}" font-size="11">{_num(x0 - t0)} {xu}</text>')
    parts.append(f'<text x="{W - PAD - 60}" y="{H - 6}" font-size="11">{_num(x1 - t0)} {xu}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _rule(rules: Sequence[dict[str, Any]], name: str) -> dict[str, Any] | None:
    for r in rules:
        if r.get("rule") == name:
            return r
        found = _rule(r.get("rules") or [], name)
        if found:
            return found
    return None


def _flat(rules: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in rules:
        out += _flat(r["rules"]) if r.get("rules") else [r]
    return out


def _rule_block(rule: dict[str, Any] | None, name: str) -> str:
    if rule is None:
        return f'<p class="note">{escape(name)} was not configured for this job.</p>'
    badge = _badge(rule["status"], rule.get("missing_data", False))
    head = f"<p>{escape(name)}: {badge}. {escape(rule.get('reason') or '')}</p>"
    rows = [
        [f.get("message", ""), _when(f.get("start_ns")), _when(f.get("end_ns"))]
        for f in rule.get("findings") or []
    ][:20]
    out = head + (_table(["finding", "from", "to"], rows) if rows else "")
    if rule.get("recommendation"):
        out += f"<p><b>Recommendation:</b> {escape(rule['recommendation'])}</p>"
    params = rule.get("parameters") or {}
    if params:
        out += (
            '<p class="note">Parameters: ' + escape(", ".join(f"{k}={v}" for k, v in params.items())) + "</p>"
        )
    return out


def _when(ns: Any) -> str:
    if not isinstance(ns, int):
        return "–"
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _steps(f: dict[str, Any]) -> str:
    if f.get("step_start") is None:
        return "–"
    a, b = f["step_start"], f["step_end"]
    return f"{a}" if a == b else f"{a}–{b}"


def model_section(results: Sequence[dict[str, Any]], tensors: TensorTable | None) -> str:
    """The "Model" section: each model rule's status, findings (step range, mode, tensors) and
    recommendation; with the tensors, the losses by mode and the gradient norms per layer."""
    names = [spec.name for spec in MODEL_RULES]
    ran = [r for r in _flat(results) if r.get("rule") in names]
    if not ran and tensors is None:
        return (
            '<p class="note">No model rule ran and no tensors were recorded '
            "(ph.watch; docs/debugging.md).</p>"
        )
    out = []
    for rule in ran:
        badge = _badge(rule["status"], rule.get("missing_data", False))
        out.append(f"<h3>{escape(rule['rule'])}</h3><p>{badge}. {escape(rule.get('reason') or '')}</p>")
        rows = [
            [_steps(f), f.get("mode") or "–", ", ".join(f.get("tensors") or []), f.get("message", "")]
            for f in rule.get("findings") or []
        ][:20]
        if rows:
            out.append(_table(["steps", "mode", "tensors", "finding"], rows))
        if rule.get("recommendation") and rule.get("findings"):
            out.append(f"<p><b>Recommendation:</b> {escape(rule['recommendation'])}</p>")
    if tensors is not None and len(tensors):
        losses = {}
        for name in tensors.names(collection="losses"):
            for mode in tensors.modes():
                steps, v = tensors.series(name, "mean", mode)
                if len(steps):
                    x = tensors.global_steps(name, mode) if mode != "train" else steps
                    losses[f"{name.split('/', 1)[1]} ({mode})"] = (x, v)
        out.append(line_plot("Losses by mode (eval at the train step it ran)", losses, "", 0, "step"))
        grads = {}
        for n in tensors.names(collection="gradients")[: len(COLOURS)]:
            steps, l2 = tensors.series(n, "l2", "train")
            with np.errstate(divide="ignore", invalid="ignore"):
                grads[n.split("/", 1)[1]] = (steps, np.log10(l2))
        out.append(line_plot("Gradient L2 norm per layer (log10)", grads, "log10", 0, "step"))
    return "".join(out)


def render_report(
    summary: dict[str, Any],
    rules: dict[str, Any] | None,
    series: JobSeries | None,
    tensors: TensorTable | None = None,
) -> str:
    """The report as an HTML document (see the module docstring)."""
    series = series or JobSeries()
    results = list((rules or {}).get("rules") or [])
    job = summary.get("job") or {}
    start = job.get("start_ns")
    t0 = start if isinstance(start, int) else (int(series.sys_t_ns[0]) if len(series.sys_t_ns) else 0)
    sec = t0 / 1e9
    sys_t = series.sys_t_ns / 1e9
    body: dict[str, str] = {}
    body["summary"] = _table(["", ""], [
        ["job", job.get("name", "")], ["host", job.get("host", "–")], ["started", _when(job.get("start_ns"))],
        ["ended", _when(job.get("end_ns"))], ["duration (s)", job.get("duration_s")],
        ["steps", (summary.get("steps") or {}).get("count", 0)], ["traces", len(summary.get("traces") or [])],
        ["system samples", (summary.get("system") or {}).get("samples", 0)],
        ["partial run", "yes" if summary.get("partial") else "no"],
    ])  # fmt: skip
    stats = []
    for name, v in sorted(series.sys.items()):
        f = v[np.isfinite(v)]
        if len(f):
            p50, p95, p99 = np.percentile(f, [50, 95, 99])
            stats.append([name, float(f.min()), float(p50), float(p95), float(p99), float(f.max())])
    cpu_lines = {
        k: (sys_t, series.sys[k])
        for k in ("cpu_percent", "mem_percent", "proc_cpu_percent")
        if k in series.sys
    }
    body["system"] = _table(["metric", "min", "p50", "p95", "p99", "max"], stats) + line_plot(
        "CPU and memory", cpu_lines, "%", sec
    )
    metrics = summary.get("metrics") or {}
    mrows = [
        [n, m.get("count"), m.get("last"), m.get("min"), m.get("mean"), m.get("max")]
        for n, m in sorted(metrics.items())
    ]
    kernels = [[k.get("name", ""), k.get("count"), k.get("total_us")] for t in summary.get("traces") or []
               for k in ((t.get("report") or {}).get("kernels") or [])[:10]]  # fmt: skip
    ops = [[o.get("name", ""), o.get("count"), o.get("total_us", o.get("self_us"))]
           for t in summary.get("traces") or []
           for o in (t.get("ops") or [])[:10]]  # fmt: skip
    ann = [
        [a["name"], a["count"], a["total_ms"], a["mean_ms"], a["max_ms"]]
        for a in (summary.get("annotations") or [])[:15]
    ]
    metric_lines = {n: (series.metrics[n][0] / 1e9, series.metrics[n][1]) for n in sorted(series.metrics)[:6]}
    body["framework"] = (
        "<h3>Training metrics</h3>" + _table(["metric", "count", "last", "min", "mean", "max"], mrows)
        + line_plot("Training metrics", metric_lines, "", sec)
        + "<h3>Annotations</h3>" + _table(["name", "count", "total ms", "mean ms", "max ms"], ann)
        + "<h3>Top CPU operators</h3>" + _table(["operator", "count", "total µs"], ops)
        + "<h3>Top GPU kernels</h3>" + _table(["kernel", "count", "total µs"], kernels)
    )  # fmt: skip
    flat = _flat(results)
    body["rules"] = _table(
        ["rule", "status", "reason", "findings"],
        [
            [r["rule"], _badge(r["status"], r.get("missing_data", False)), r.get("reason", ""),
             r.get("finding_count", 0)]
            for r in flat
        ],
    ) if flat else '<p class="note">No rule results (the job has not been evaluated).</p>'  # fmt: skip
    st = series.steps
    step_plot = (
        line_plot("Step duration", {"step (ms)": (st[0] / 1e9, st[1] / 1e6)}, "ms", sec)
        if st is not None and len(st[0])
        else ""
    )
    s = summary.get("steps") or {}
    body["steps"] = _table(["steps", "mean ms", "median ms", "p90 ms", "max ms"],
                           [[s.get("count", 0), s.get("mean_ms"), s.get("median_ms"), s.get("p90_ms"),
                             s.get("max_ms")]]
                           ) + step_plot  # fmt: skip
    gpu_util = {
        k.removesuffix(".util_percent"): (sys_t, v)
        for k, v in series.sys.items()
        if k.endswith(".util_percent")
    }
    gpu_mem = {}
    for k, v in series.sys.items():
        if k.endswith(".mem_used_bytes") and k.replace("used", "total") in series.sys:
            total = series.sys[k.replace("used", "total")]
            with np.errstate(invalid="ignore", divide="ignore"):
                gpu_mem[k.split(".")[0]] = (sys_t, np.where(total > 0, 100 * v / total, np.nan))
    body["gpu"] = line_plot("GPU utilisation", gpu_util, "%", sec)
    body["batch"] = ""
    body["cpu"] = line_plot(
        "CPU",
        {"cpu_percent": (sys_t, series.sys["cpu_percent"])} if "cpu_percent" in series.sys else {},
        "%",
        sec,
    )
    io = {k: (sys_t, series.sys[k]) for k in ("cpu_iowait_percent",) if k in series.sys}
    disk = {
        k: (sys_t, series.sys[k] / 1e6)
        for k in ("disk_read_bytes_per_s", "disk_write_bytes_per_s")
        if k in series.sys
    }
    body["io"] = line_plot("I/O wait", io, "%", sec) + line_plot("Disk", disk, "MB/s", sec)
    body["balance"] = line_plot("GPU utilisation per GPU", gpu_util, "%", sec) if len(gpu_util) > 1 else ""
    body["memory"] = line_plot("GPU memory", gpu_mem, "%", sec)
    body["model"] = model_section(results, tensors)
    html = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Profiling report: {escape(str(job.get('name', '')))}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Profiling report: {escape(str(job.get('name', '')))}</h1>",
        f'<p class="note">Rules status: {_badge(*_job_status(rules))}; '
        "generated by ProfilerHub.</p>",
    ]  # fmt: skip
    for key, title in SECTIONS:
        html.append(f'<section id="{key}"><h2>{escape(title)}</h2>')
        if key in RULE_OF_SECTION:
            html.append(_rule_block(_rule(results, RULE_OF_SECTION[key]), RULE_OF_SECTION[key]))
        html.append(body.get(key, ""))
        html.append("</section>")
    html.append("</body></html>")
    return "\n".join(html)


__all__ = ["SECTIONS", "line_plot", "model_section", "render_report"]
