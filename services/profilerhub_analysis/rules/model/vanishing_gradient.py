"""VanishingGradient: gradients whose mean absolute value falls below ``threshold`` (SageMaker's
1e-7). Per gradient tensor, rank and saved train step: mean |g| = ``l1`` over the finite elements.
A finding per tensor and run of steps below the threshold."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import Param, RuleResult, RuleSpec
from profilerhub_analysis.rules.model._common import (
    Collected,
    fig,
    label,
    sig,
    step_runs,
    tensor_list,
    tensor_rule,
)

NAME = "VanishingGradient"
PARAMS = (Param("threshold", 1e-7, 0, 1e12, description="mean |gradient| below which a gradient vanishes"),)
RECOMMENDATION = (
    "Gradients this small stop the layers from learning. Use an initialisation matched to the "
    "activation (Kaiming for ReLU, Xavier for tanh), residual connections or normalisation layers, "
    "ReLU-family activations instead of saturating ones, or a larger learning rate for those layers."
)


def mean_abs(table: Any, name: str, mode: str, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, mean |x|)`` over the finite elements of one tensor."""
    steps, l1 = table.series(name, "l1", mode, rank)
    _, n = table.series(name, "numel", mode, rank)
    _, nan = table.series(name, "nan", mode, rank)
    _, inf = table.series(name, "inf", mode, rank)
    with np.errstate(invalid="ignore", divide="ignore"):
        return steps, l1 / (n - nan - inf)


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table = out.table
    names = table.names(collection="gradients")
    if not names:
        return out.short("no gradients recorded: ph.watch(model) records them with the default collections")
    threshold = params["threshold"]
    lowest = np.inf
    for mode, rank, name in out.each(names):
        steps, m = mean_abs(table, name, mode, rank)
        if not len(steps):
            continue
        lowest = min(lowest, float(np.nanmin(m)) if np.isfinite(m).any() else np.inf)
        for a, b, first, last in step_runs(steps, m < threshold):
            low = float(np.nanmin(m[a : b + 1]))
            who = label(name, rank, table)
            msg = f"{who}: mean |grad| {sig(low)} < {sig(threshold)} at steps {first}-{last}"
            figures = {"mean_abs_grad": fig(low), "threshold": threshold}
            out.flag(msg, name, mode, rank, first, last, figures, steps, m)
    hit = out.tensors()
    low_txt = sig(min((f.figures["mean_abs_grad"] or 0.0) for f in out.findings)) if out.findings else ""
    return out.result(
        checked=len(names),
        what="gradient tensor(s)",
        found=f"{len(hit)} gradient(s) vanish ({tensor_list(hit)}; "
        f"mean |grad| down to {low_txt} < {sig(threshold)})",
        figures={"lowest_mean_abs_grad": fig(lowest)},
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
