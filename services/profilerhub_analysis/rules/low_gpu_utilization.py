"""LowGPUUtilization: GPUs mostly idle (low p95) or swinging between busy and idle (high p95, low p5).

Per GPU, after skipping ``patience`` datapoints, every ``window`` datapoints: p95 below
``threshold_p95`` is underutilisation; p95 at or above it with p5 below ``threshold_p5`` is
fluctuation (SageMaker Debugger's definition and defaults).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import (
    Finding,
    Param,
    RuleData,
    RuleResult,
    RuleSpec,
    RuleStatus,
    error,
    evidence,
    not_enough,
    pct,
    window_quantiles,
    windows,
)

NAME = "LowGPUUtilization"
PARAMS = (
    Param("threshold_p95", 70, 0, 100, description="p95 GPU utilisation (%) below which a GPU is underused"),
    Param("threshold_p5", 10, 0, 100, description="p5 GPU utilisation (%) below which a busy GPU fluctuates"),
    Param("window", 500, 1, 1e9, integer=True, description="datapoints per quantile"),
    Param("patience", 1000, 0, 1e9, integer=True, description="datapoints skipped at the start"),
)
RECOMMENDATION = (
    "Low p95: increase the batch size, or use a smaller instance. Fluctuating: check for bottlenecks "
    "that stall the GPU between steps (data loading, CPU pre-processing, synchronisation)."
)


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    if not data.gpu_util:
        return error(
            NAME, params, "no GPU samples: the job ran on CPU (no NVML samples and no GPU work in a trace)"
        )
    patience, window = params["patience"], params["window"]
    findings: list[Finding] = []
    figures: dict[str, Any] = {}
    ev: dict[str, list[list[float]]] = {}
    checked = 0
    for gpu, raw in data.gpu_util.items():
        s = raw.finite()
        bounds = windows(len(s), patience, window)
        if not len(bounds):
            continue
        checked += 1
        p95, p5 = window_quantiles(s.values, bounds, [95, 5], data.windows, f"{NAME}.{gpu}")
        all_p95, all_p5 = np.percentile(s.values[patience:], [95, 5])
        figures[gpu] = {
            "p95": pct(all_p95),
            "p5": pct(all_p5),
            "windows": len(bounds),
            "source": s.source,
        }
        low = p95 < params["threshold_p95"]
        swing = ~low & (p5 < params["threshold_p5"])
        for i in np.flatnonzero(low | swing).tolist():
            lo, hi = bounds[i]
            kind = "underutilized" if low[i] else "fluctuating"
            message = (
                f"{gpu} {kind}: p95 utilisation {p95[i]:.1f} % < {params['threshold_p95']:g} %"
                if low[i]
                else f"{gpu} {kind}: p95 {p95[i]:.1f} % but p5 {p5[i]:.1f} % < {params['threshold_p5']:g} %"
            )
            findings.append(
                Finding(
                    message,
                    int(s.t_ns[lo]),
                    int(s.t_ns[hi - 1]),
                    {"gpu": gpu, "kind": kind, "p95": pct(p95[i]), "p5": pct(p5[i])},
                    f"{gpu}.util_percent",
                )
            )
        if low.any() or swing.any():
            ev[f"{gpu}.util_percent"] = evidence(s)
    if not checked:
        most = max(len(s) for s in data.gpu_util.values())
        return not_enough(
            NAME, data, params, f"{most} GPU datapoints, fewer than patience {patience} + window {window} / 2"
        )
    status = RuleStatus.IssuesFound if findings else RuleStatus.NoIssuesFound
    reason = (
        f"{len(findings)} window(s) of low or fluctuating GPU utilisation"
        if findings
        else f"checked {checked} GPU(s)"
    )
    return RuleResult(NAME, status, reason, params, findings, figures, ev, RECOMMENDATION)


SPEC = RuleSpec(NAME, PARAMS, evaluate, __doc__.splitlines()[0] if __doc__ else NAME)
