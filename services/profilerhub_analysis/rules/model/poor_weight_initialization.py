"""PoorWeightInitialization: the first ``steps`` saved train steps show a badly initialised model.

Three checks over the first ``steps`` steps (SageMaker's three):

- **activation variance across layers**: at a step, the largest variance (``std ** 2``) of the
  activation inputs divided by the smallest exceeds ``threshold``. The inputs of activation
  functions are the outputs of the layers before them, so by default these are the activations of
  layers that are not activation functions (Linear, Conv …); ``activation_inputs_regex`` picks
  tensors by name instead (SageMaker's default ``.*relu_input`` names no torch module).
- **gradient spread**: at a step, the 5th-95th percentile range of all gradients pooled is below
  ``distribution_range``. The pooled standard deviation is exact from the reductions (L2 and mean
  per tensor); the range is taken as 3.29 standard deviations (a normal distribution's).
- **loss**: the training loss reaches no new minimum in ``patience`` saved steps in a row.

Triggered by the first check, or by the second and third together (narrow gradients are blamed
when the loss does not move either)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import Param, RuleResult, RuleSpec, split_list
from profilerhub_analysis.rules.model._common import (
    Collected,
    fig,
    pre_activations,
    sig,
    tensor_list,
    tensor_rule,
)
from profilerhub_analysis.rules.model._losses import loss_names, values

NAME = "PoorWeightInitialization"
SPREAD_PER_STD = 3.29
"""p95 - p5 of a normal distribution, in standard deviations."""
PARAMS = (
    Param(
        "activation_inputs_regex",
        "",
        description="comma-separated regexes of activation inputs (default: pre-activation layers)",
    ),
    Param(
        "threshold",
        10,
        1,
        1e12,
        description="largest/smallest activation-input variance across layers that triggers",
    ),
    Param(
        "distribution_range",
        0.001,
        0,
        1e12,
        description="5th-95th percentile range of gradients below which they are too narrow",
    ),
    Param("patience", 5, 1, 1e9, integer=True, description="saved steps without a new minimum of the loss"),
    Param("steps", 10, 1, 1e9, integer=True, description="first saved train steps checked"),
)
RECOMMENDATION = (
    "Initialise for the activation that follows each layer (torch.nn.init.kaiming_normal_ for "
    "ReLU, xavier_uniform_ for tanh/sigmoid) so that activations keep their variance from layer to "
    "layer; normalisation layers make training less sensitive to it."
)


def _inputs(table: Any, regex: str) -> list[str]:
    if regex:
        patterns = [re.compile(p) for p in split_list(regex)]
        return [n for n in table.names() if any(p.search(n) for p in patterns)]
    return pre_activations(table)


def variance_ratio(
    table: Any, names: list[str], first: list[int]
) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str]]]:
    """Per step of ``first``: max/min variance across ``names`` and which two layers they are."""
    steps, std = table.matrix(names, "std", "train", 0)
    keep = np.isin(steps, first)
    steps, var = steps[keep], (std[:, keep] ** 2)
    ratios, which = [], []
    for j in range(len(steps)):
        col = var[:, j]
        ok = np.flatnonzero(np.isfinite(col) & (col > 0))
        if len(ok) < 2:
            ratios.append(np.nan)
            which.append(("", ""))
            continue
        hi, lo = ok[np.argmax(col[ok])], ok[np.argmin(col[ok])]
        ratios.append(col[hi] / col[lo])
        which.append((names[hi], names[lo]))
    return steps, np.array(ratios), which


def pooled_spread(table: Any, first: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per step of ``first``: 3.29 pooled standard deviations of every gradient."""
    names = table.names(collection="gradients")
    if not names:
        return np.zeros(0, np.int64), np.zeros(0)
    steps, l2 = table.matrix(names, "l2", "train", 0)
    _, mean = table.matrix(names, "mean", "train", 0)
    _, n = table.matrix(names, "numel", "train", 0)
    keep = np.isin(steps, first)
    steps, l2, mean, n = steps[keep], l2[:, keep], mean[:, keep], n[:, keep]
    total = np.nansum(n, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.nansum(mean * n, axis=0) / total
        var = np.nansum(l2 * l2, axis=0) / total - m * m
    return steps, SPREAD_PER_STD * np.sqrt(np.maximum(var, 0))


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table = out.table
    first = table.steps(mode="train")[: params["steps"]]
    if not first:
        return out.short("no train steps recorded")
    figures: dict[str, Any] = {}
    inputs = _inputs(table, params["activation_inputs_regex"])
    checked = 0
    if len(inputs) >= 2:
        checked += 1
        steps, ratio, which = variance_ratio(table, inputs, first)
        figures["max_variance_ratio"] = fig(float(np.nanmax(ratio))) if np.isfinite(ratio).any() else None
        over = np.flatnonzero(np.nan_to_num(ratio) > params["threshold"])
        if len(over):
            i = int(over[np.argmax(ratio[over])])
            hi, lo = which[i]
            msg = (
                f"activation variance differs {sig(ratio[i])}x across layers at step {int(steps[i])} "
                f"({hi.split('/', 1)[-1]} vs {lo.split('/', 1)[-1]}; threshold {sig(params['threshold'])})"
            )
            out.add(
                msg,
                [hi, lo],
                "train",
                0,
                int(steps[over[0]]),
                int(steps[over[-1]]),
                {"variance_ratio": fig(ratio[i]), "check": "activation_variance"},
            )
            out.see("activation_variance_ratio", steps, ratio)
    gsteps, spread = pooled_spread(table, first)
    narrow = np.flatnonzero(np.nan_to_num(spread, nan=np.inf) < params["distribution_range"])
    if len(gsteps):
        checked += 1
        figures["min_gradient_range"] = fig(float(np.nanmin(spread))) if np.isfinite(spread).any() else None
    stalled = _loss_stalled(table, first, params["patience"])
    if len(narrow) and stalled is not None:
        i = int(narrow[np.argmin(spread[narrow])])
        msg = (
            f"gradients' 5-95 % range {sig(spread[i])} < {sig(params['distribution_range'])} at step "
            f"{int(gsteps[i])} while the loss made no new minimum for {params['patience']} steps "
            f"from step {stalled[0]}"
        )
        out.add(
            msg,
            [stalled[2]],
            "train",
            0,
            int(gsteps[narrow[0]]),
            int(stalled[1]),
            {"gradient_range": fig(spread[i]), "check": "gradient_range"},
        )
        out.see("gradient_range", gsteps, spread)
    if not checked:
        return out.short("neither activations of two layers nor gradients recorded")
    return out.result(
        checked=checked,
        what="check(s) over the first steps",
        found=lambda fs: fs[0].message,
        figures=figures | {"steps_checked": len(first), "activation_inputs": tensor_list(inputs)},
    )


def _loss_stalled(table: Any, first: list[int], patience: int) -> tuple[int, int, str] | None:
    """``(from step, to step, loss)`` of ``patience`` saved steps without a new minimum, if any."""
    for name in loss_names(table):
        steps, v = values(table, name, "train", 0)
        keep = np.isin(steps, first) & np.isfinite(v)
        steps, v = steps[keep], v[keep]
        if len(v) <= patience:
            continue
        best = np.minimum.accumulate(v)
        improved = np.concatenate([[True], best[1:] < best[:-1]])
        last_new = np.maximum.accumulate(np.where(improved, np.arange(len(v)), 0))
        since = np.arange(len(v)) - last_new
        hit = np.flatnonzero(since >= patience)
        if len(hit):
            k = int(hit[0])
            return int(steps[last_new[k]]), int(steps[k]), name
    return None


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
