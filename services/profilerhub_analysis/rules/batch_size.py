"""BatchSize: CPU, GPU and GPU memory all low at once, so a larger batch would use the machine better.

Per GPU, after ``patience`` datapoints, every ``window`` datapoints: triggered when the p95 of CPU
utilisation is below ``cpu_threshold_p95``, of that GPU's utilisation below ``gpu_threshold_p95``
and of its memory utilisation below ``gpu_memory_threshold_p95`` (SageMaker's defaults).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import (
    PerGpu,
    RuleData,
    RuleResult,
    RuleSpec,
    earlier_index,
    error,
    evidence,
    not_enough,
    patience_param,
    pct,
    percent_param,
    window_param,
    window_quantiles,
)

NAME = "BatchSize"
PARAMS = (
    percent_param("cpu_threshold_p95", 70, "p95 CPU utilisation (%) below which the CPU is underused"),
    percent_param("gpu_threshold_p95", 70, "p95 GPU utilisation (%) below which the GPU is underused"),
    percent_param("gpu_memory_threshold_p95", 70, "p95 GPU memory (%) below which memory is underused"),
    patience_param(),
    window_param(500),
)
RECOMMENDATION = "Increase the batch size (scaling the learning rate with it), or run on a smaller instance."


def _on(t_ns: np.ndarray, series: Any) -> np.ndarray:
    """``series`` resampled at ``t_ns`` (nearest earlier sample)."""
    s = series.finite()
    if not len(s):
        return np.full(len(t_ns), np.nan)
    return s.values[earlier_index(s.t_ns, t_ns)]


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    if not data.gpu_util:
        return error(NAME, params, "no GPU samples: the job ran on CPU")
    cpu = data.system.get("cpu_percent")
    if cpu is None or not len(cpu.finite()):
        return error(NAME, params, "no CPU samples: the SDK's system sampler recorded no cpu_percent")
    if not data.gpu_mem:
        return error(NAME, params, "no GPU memory samples (NVML reported no memory use)")
    patience, window = params["patience"], params["window"]
    tally = PerGpu()
    with_memory = {gpu: util for gpu, util in data.gpu_util.items() if gpu in data.gpu_mem}
    for gpu, u, bounds in tally.windowed(with_memory, patience, window):
        mem = data.gpu_mem[gpu]
        c, m = _on(u.t_ns, cpu), _on(u.t_ns, mem)
        q_u, q_c, q_m = (
            window_quantiles(v, bounds, 95, data.windows, f"{NAME}.{gpu}.{what}")
            for v, what in ((u.values, "util"), (c, "cpu"), (m, "mem"))
        )
        hit = (
            (q_c < params["cpu_threshold_p95"])
            & (q_u < params["gpu_threshold_p95"])
            & (q_m < params["gpu_memory_threshold_p95"])
        )
        tally.figures[gpu] = {
            "windows": len(bounds),
            "cpu_p95": pct(np.nanmax(q_c)),
            "gpu_p95": pct(np.nanmax(q_u)),
            "gpu_memory_p95": pct(np.nanmax(q_m)),
        }
        for i in np.flatnonzero(hit).tolist():
            message = (
                f"{gpu}: p95 CPU {q_c[i]:.1f} %, GPU {q_u[i]:.1f} %, "
                f"GPU memory {q_m[i]:.1f} % all below thresholds"
            )
            figures = {
                "gpu": gpu,
                "cpu_p95": pct(q_c[i]),
                "gpu_p95": pct(q_u[i]),
                "gpu_memory_p95": pct(q_m[i]),
            }
            tally.flag(u, bounds, i, message, figures, f"{gpu}.util_percent")
        if hit.any():
            tally.evidence[f"{gpu}.util_percent"] = evidence(u)
            tally.evidence[f"{gpu}.mem_percent"] = evidence(mem)
    if not tally.checked:
        return not_enough(
            NAME, data, params, f"fewer GPU datapoints than patience {patience} + window {window} / 2"
        )
    return tally.result(
        NAME,
        params,
        RECOMMENDATION,
        found=f"{len(tally.findings)} window(s) with CPU, GPU and GPU memory all underused",
        clean=f"checked {tally.checked} GPU(s)",
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
