"""LowGPUUtilization: GPUs mostly idle (low p95) or swinging between busy and idle (high p95, low p5).

Per GPU, after skipping ``patience`` datapoints, every ``window`` datapoints: p95 below
``threshold_p95`` is underutilisation; p95 at or above it with p5 below ``threshold_p5`` is
fluctuation (SageMaker Debugger's definition and defaults).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import (
    PerGpu,
    RuleData,
    RuleResult,
    RuleSpec,
    error,
    evidence,
    not_enough,
    patience_param,
    pct,
    percent_param,
    window_param,
    window_quantiles,
)

NAME = "LowGPUUtilization"
PARAMS = (
    percent_param("threshold_p95", 70, "p95 GPU utilisation (%) below which a GPU is underused"),
    percent_param("threshold_p5", 10, "p5 GPU utilisation (%) below which a busy GPU fluctuates"),
    window_param(500),
    patience_param(),
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
    tally = PerGpu()
    for gpu, s, bounds in tally.windowed(data.gpu_util, patience, window):
        p95, p5 = window_quantiles(s.values, bounds, [95, 5], data.windows, f"{NAME}.{gpu}")
        all_p95, all_p5 = np.percentile(s.values[patience:], [95, 5])
        tally.figures[gpu] = {
            "p95": pct(all_p95),
            "p5": pct(all_p5),
            "windows": len(bounds),
            "source": s.source,
        }
        low = p95 < params["threshold_p95"]
        swing = ~low & (p5 < params["threshold_p5"])
        for i in np.flatnonzero(low | swing).tolist():
            kind = "underutilized" if low[i] else "fluctuating"
            message = (
                f"{gpu} {kind}: p95 utilisation {p95[i]:.1f} % < {params['threshold_p95']:g} %"
                if low[i]
                else f"{gpu} {kind}: p95 {p95[i]:.1f} % but p5 {p5[i]:.1f} % < {params['threshold_p5']:g} %"
            )
            figures = {"gpu": gpu, "kind": kind, "p95": pct(p95[i]), "p5": pct(p5[i])}
            tally.flag(s, bounds, i, message, figures, f"{gpu}.util_percent")
        if low.any() or swing.any():
            tally.evidence[f"{gpu}.util_percent"] = evidence(s)
    if not tally.checked:
        most = max(len(s) for s in data.gpu_util.values())
        return not_enough(
            NAME, data, params, f"{most} GPU datapoints, fewer than patience {patience} + window {window} / 2"
        )
    return tally.result(
        NAME,
        params,
        RECOMMENDATION,
        found=f"{len(tally.findings)} window(s) of low or fluctuating GPU utilisation",
        clean=f"checked {tally.checked} GPU(s)",
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
