"""SaturatedActivation: tanh and sigmoid layers whose outputs sit at the ends of their range.

Per tanh layer and saved step: the share of outputs with ``|y| >= threshold_tanh``; per sigmoid
layer: the share with ``y >= threshold_sigmoid`` or ``y <= 1 - threshold_sigmoid`` (near 0 or 1).
More than ``ratio_threshold`` of them saturated is a finding. The shares are read from the
tensors' log-magnitude histograms (``tensors.hist_fraction``, a threshold taken at a bin edge:
0.97 is one). SageMaker's version compares the layers' *inputs* with (-9.4999, 9.4999) /
(-23, 16.99999); ProfilerHub records module outputs, so the thresholds are on the outputs, where
0.97 marks a nearly flat slope. Layers are the activations whose module is a Tanh or Sigmoid (or,
for a table that does not record module types, whose name says tanh/sigmoid); ``tensor_regex``
narrows them."""

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
from profilerhub_analysis.tensors import hist_fraction

NAME = "SaturatedActivation"
PARAMS = (
    Param("threshold_tanh", 0.97, 0, 1, description="|tanh output| at or above which a unit is saturated"),
    Param(
        "threshold_sigmoid",
        0.97,
        0.5,
        1,
        description="sigmoid output at or above which (or at or below 1 - it) a unit is saturated",
    ),
    Param("ratio_threshold", 0.5, 0, 1, description="share of saturated outputs in a layer that triggers"),
    regex_param("narrowing the layers checked"),
)
RECOMMENDATION = (
    "Saturated tanh/sigmoid units pass almost no gradient. Normalise their inputs (BatchNorm, "
    "LayerNorm), initialise with Xavier/Glorot, lower the learning rate, or use a ReLU-family "
    "activation."
)


def saturated(
    table: Any, name: str, kind: str, rank: int, params: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, share of saturated outputs)`` of one tanh or sigmoid layer."""
    steps, counts = table.hist(name, "train", rank)
    if kind == "tanh":
        return steps, hist_fraction(counts, params["threshold_tanh"])
    t = params["threshold_sigmoid"]
    return steps, hist_fraction(counts, t) + hist_fraction(counts, 0, 1 - t)


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table = out.table
    layers = [(n, k) for k in ("tanh", "sigmoid") for n in of_kind(table, k, params["tensor_regex"])]
    if not layers:
        return out.short(
            'no tanh or sigmoid activations recorded: ph.watch(model, collections=[…, "activations"])'
        )
    for mode, rank, (name, kind) in out.each(layers):
        steps, share = saturated(table, name, kind, rank, params)
        for a, b, first, last in step_runs(steps, np.nan_to_num(share) > params["ratio_threshold"]):
            top = float(share[a : b + 1].max())
            msg = (
                f"{label(name, rank, table)} ({kind}): {top:.1%} of outputs saturated at steps {first}-{last}"
            )
            figures = {"saturated_percent": fig(100 * top), "kind": kind}
            out.flag(msg, name, mode, rank, first, last, figures, steps, 100 * share)
    hit = out.tensors()
    return out.result(
        checked=len(layers),
        what="tanh/sigmoid layer(s)",
        found=f"{len(hit)} layer(s) saturated ({tensor_list(hit)})",
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
