"""GPUMemoryIncrease: GPU memory use that keeps growing (a leak, or a batch that grows).

Per GPU, after ``patience`` datapoints, the moving average over ``window`` datapoints is compared
with the one a window earlier; a rise of more than ``increase`` percentage points triggers.
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
    runs,
)

NAME = "GPUMemoryIncrease"
PARAMS = (
    Param("increase", 5, 0, 100, description="rise of the moving average (percentage points) that triggers"),
    Param("patience", 1000, 0, 1e9, integer=True, description="datapoints skipped at the start"),
    Param("window", 10, 1, 1e9, integer=True, description="datapoints in the moving average"),
)
RECOMMENDATION = (
    "Look for tensors kept across steps (losses appended to a list without .item(), growing caches), "
    "and for inputs whose size grows; torch.cuda.memory_summary() shows who holds memory."
)


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    if not data.gpu_mem:
        return error(
            NAME, params, "no GPU memory samples: the job ran on CPU (or NVML reported no memory use)"
        )
    patience, window = params["patience"], params["window"]
    findings: list[Finding] = []
    figures: dict[str, Any] = {}
    ev: dict[str, list[list[float]]] = {}
    checked = 0
    for gpu, raw in data.gpu_mem.items():
        s = raw.finite()
        v, t = s.values[patience:], s.t_ns[patience:]
        if len(v) < 2 * window:
            continue
        checked += 1
        c = np.concatenate([[0.0], np.cumsum(v)])
        ma = (c[window:] - c[:-window]) / window  # ma[i] = mean of v[i : i + window]
        rise = ma[window:] - ma[:-window]  # against the window just before
        figures[gpu] = {"max_rise": pct(rise.max()), "start_percent": pct(ma[0]), "end_percent": pct(ma[-1])}
        for a, b in runs(rise > params["increase"]).tolist():
            top = int(a + np.argmax(rise[a : b + 1]))
            findings.append(
                Finding(
                    f"{gpu} memory rose {rise[top]:.1f} points within {window * 2} datapoints "
                    f"(> {params['increase']:g})",
                    int(t[a]),
                    int(t[min(b + 2 * window - 1, len(t) - 1)]),
                    {
                        "gpu": gpu,
                        "rise": pct(rise[top]),
                        "from_percent": pct(ma[top]),
                        "to_percent": pct(ma[top + window]),
                    },
                    f"{gpu}.mem_percent",
                )
            )
        if (rise > params["increase"]).any():
            ev[f"{gpu}.mem_percent"] = evidence(s)
    if not checked:
        return not_enough(
            NAME, data, params, f"fewer GPU memory datapoints than patience {patience} + 2 × window {window}"
        )
    status = RuleStatus.IssuesFound if findings else RuleStatus.NoIssuesFound
    reason = f"{len(findings)} rise(s) of GPU memory" if findings else f"checked {checked} GPU(s)"
    return RuleResult(NAME, status, reason, params, findings, figures, ev, RECOMMENDATION)


SPEC = RuleSpec(NAME, PARAMS, evaluate, __doc__.splitlines()[0] if __doc__ else NAME)
