"""DeadRelu: ReLU layers where most units have stopped firing.

A unit is dead when it is active (output > 0) in less than ``threshold_inactivity`` % of the
batch; a layer with more than ``threshold_layer`` % dead units triggers. When the SDK records the
per-unit share (the ``dead_frac`` statistic: units active in under 1 %, SageMaker's default), the
rule reads it. Otherwise it estimates the dead share from the layer's share of zero outputs
``z``: live units of a healthy ReLU layer fire about half the time, so ``z = dead + (1 - dead) / 2``
and ``dead ≈ 2 z - 1`` (a layer of 50 % dead units has 75 % zeros; a layer that fires less than
``threshold_inactivity`` % overall is all dead). Layers are the activations of ReLU modules (or,
for a table without module types, whose name says relu); ``tensor_regex`` narrows them."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import Param, RuleResult, RuleSpec
from profilerhub_analysis.rules.model._common import (
    Collected,
    fig,
    label,
    of_kind,
    regex_param,
    step_runs,
    tensor_list,
    tensor_rule,
)

NAME = "DeadRelu"
PARAMS = (
    Param(
        "threshold_inactivity", 1.0, 0, 100, description="% of the batch below which a unit counts as dead"
    ),
    Param("threshold_layer", 50.0, 0, 100, description="% of dead units in a layer that triggers"),
    regex_param("narrowing the layers checked"),
)
RECOMMENDATION = (
    "Dead ReLUs output zero for every input and get no gradient, so they never recover. Lower the "
    "learning rate, initialise with Kaiming (He), add normalisation before the activation, or use "
    "LeakyReLU/GELU."
)


def dead_share(table: Any, name: str, rank: int, inactivity: float) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, share of dead units)`` of one ReLU layer (see the module docstring)."""
    if "dead_frac" in getattr(table, "stats", {}):
        steps, dead = table.series(name, "dead_frac", "train", rank)
        if np.isfinite(dead).any():
            return steps, dead
    steps, z = table.series(name, "zero_frac", "train", rank)
    est = np.clip(2 * z - 1, 0, 1)
    return steps, np.where(1 - z < inactivity / 100, 1.0, est)


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table = out.table
    layers = of_kind(table, "relu", params["tensor_regex"])
    if not layers:
        return out.short(
            'no ReLU activations recorded: ph.watch(model, collections=[…, "activations"])',
        )
    for mode, rank, name in out.each(layers):
        steps, dead = dead_share(table, name, rank, params["threshold_inactivity"])
        for a, b, first, last in step_runs(steps, np.nan_to_num(dead) > params["threshold_layer"] / 100):
            top = float(dead[a : b + 1].max())
            msg = f"{label(name, rank, table)}: {top:.0%} of units dead at steps {first}-{last}"
            out.flag(msg, name, mode, rank, first, last, {"dead_percent": fig(100 * top)}, steps, 100 * dead)
    hit = out.tensors()
    return out.result(
        checked=len(layers),
        what="ReLU layer(s)",
        found=f"{len(hit)} ReLU layer(s) mostly dead ({tensor_list(hit)})",
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
