"""WeightUpdateRatio: optimizer updates too large or too small for their weights.

Per weight tensor and saved train step: ``ratio = l2(update) / (l2(weight) + epsilon)``, the update
being what ``optimizer.step()`` changed (``optimizer_variables/<param>:update``, recorded with the
weight before the step, at the same step). Triggered by a ratio above ``large_threshold`` or
below ``small_threshold``; a finding per weight and run of such steps. (SageMaker's ``num_steps``,
comparing weights saved further apart, is not offered: the SDK records each step's own update.)"""

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

NAME = "WeightUpdateRatio"
PARAMS = (
    Param(
        "large_threshold", 10, 0, 1e12, description="update/weight ratio above which an update is too large"
    ),
    Param(
        "small_threshold", 1e-8, 0, 1e12, description="update/weight ratio below which an update is too small"
    ),
    Param("epsilon", 1e-9, 0, 1, description="added to the weight's norm so that a zero weight divides"),
)
RECOMMENDATION = (
    "Updates far larger than the weights throw training off; far smaller ones barely move it. "
    "Adjust the learning rate (or that parameter group's), check for a learning-rate schedule gone "
    "to zero or a weight that the optimizer does not hold."
)


def update_of(name: str) -> str:
    """``weights/fc.weight`` -> ``optimizer_variables/fc.weight:update``."""
    return f"optimizer_variables/{name.split('/', 1)[1]}:update"


def ratio_series(table: Any, name: str, rank: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, l2(update) / (l2(weight) + epsilon))`` at the steps both were recorded."""
    ws, wl2 = table.series(name, "l2", "train", rank)
    us, ul2 = table.series(update_of(name), "l2", "train", rank)
    steps, wi, ui = np.intersect1d(ws, us, return_indices=True)
    return steps, ul2[ui] / (wl2[wi] + epsilon)


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table = out.table
    have = set(table.names(collection="optimizer_variables"))
    names = [n for n in table.names(collection="weights") if update_of(n) in have]
    if not names:
        return out.short("no weight updates recorded: pass optimizer= to ph.watch")
    large, small = params["large_threshold"], params["small_threshold"]
    lo, hi = np.inf, 0.0
    for mode, rank, name in out.each(names):
        steps, ratio = ratio_series(table, name, rank, params["epsilon"])
        if not len(steps):
            continue
        if np.isfinite(ratio).any():
            lo, hi = min(lo, float(np.nanmin(ratio))), max(hi, float(np.nanmax(ratio)))
        for mask, what, limit in ((ratio > large, "large", large), (ratio < small, "small", small)):
            for a, b, first, last in step_runs(steps, mask):
                seg = ratio[a : b + 1]
                worst = float(seg.max() if what == "large" else seg.min())
                sign = ">" if what == "large" else "<"
                msg = (
                    f"{label(name, rank, table)}: update/weight ratio {sig(worst)} {sign} {sig(limit)} "
                    f"(too {what}) at steps {first}-{last}"
                )
                figures = {"ratio": fig(worst), "too": what}
                out.flag(msg, name, mode, rank, first, last, figures, steps, ratio, [name, update_of(name)])
    hit = out.tensors()
    return out.result(
        checked=len(names),
        what="weight tensor(s) with updates",
        found=lambda fs: f"{len(hit)} weight(s) with updates too {fs[0].figures['too']} ({tensor_list(hit)})",
        figures={"min_ratio": fig(lo), "max_ratio": fig(hi)},
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
