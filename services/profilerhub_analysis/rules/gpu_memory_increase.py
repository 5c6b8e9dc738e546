"""GPUMemoryIncrease: GPU memory use that keeps growing (a leak, or a batch that grows).

Per GPU, after ``patience`` datapoints, the moving average over ``window`` datapoints is compared
with the one a window earlier; a rise of more than ``increase`` percentage points triggers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import (
    Finding,
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
    runs,
    window_param,
)

NAME = "GPUMemoryIncrease"
PARAMS = (
    percent_param("increase", 5, "rise of the moving average (percentage points) that triggers"),
    patience_param(),
    window_param(10, "datapoints in the moving average"),
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
    tally = PerGpu()
    for gpu, raw in data.gpu_mem.items():
        s = raw.finite()
        v, t = s.values[patience:], s.t_ns[patience:]
        if len(v) < 2 * window:
            continue
        tally.checked += 1
        c = np.concatenate([[0.0], np.cumsum(v)])
        ma = (c[window:] - c[:-window]) / window  # ma[i] = mean of v[i : i + window]
        rise = ma[window:] - ma[:-window]  # against the window just before
        tally.figures[gpu] = {
            "max_rise": pct(rise.max()),
            "start_percent": pct(ma[0]),
            "end_percent": pct(ma[-1]),
        }
        for a, b in runs(rise > params["increase"]).tolist():
            top = int(a + np.argmax(rise[a : b + 1]))
            tally.findings.append(
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
            tally.evidence[f"{gpu}.mem_percent"] = evidence(s)
    if not tally.checked:
        return not_enough(
            NAME, data, params, f"fewer GPU memory datapoints than patience {patience} + 2 × window {window}"
        )
    return tally.result(
        NAME,
        params,
        RECOMMENDATION,
        found=f"{len(tally.findings)} rise(s) of GPU memory",
        clean=f"checked {tally.checked} GPU(s)",
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
