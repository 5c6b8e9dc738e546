"""UnchangedTensor: a tensor that stops changing over ``num_steps`` saved steps.

SageMaker runs ``numpy.allclose(rtol, atol)`` on the full tensors; the SDK keeps reductions, so a
tensor counts as unchanged over ``num_steps`` consecutive saved steps (of its mode) when each of
its reductions (min, max, mean, std, L1, L2, the count of NaN and Inf) is ``allclose`` to the
first step's: necessary for an unchanged tensor, and a change that keeps every reduction equal
goes unseen. Default tensors: the weights (``collection_names`` / ``tensor_regex`` choose others);
a weight without any gradient recorded is frozen on purpose and skipped. A finding per tensor and
run of unchanged windows."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import Param, RuleResult, RuleSpec
from profilerhub_analysis.rules.model._common import (
    Collected,
    collections_param,
    label,
    pick,
    regex_param,
    step_runs,
    tensor_list,
    tensor_rule,
    train_mode,
)

NAME = "UnchangedTensor"
COMPARED = ("min", "max", "mean", "std", "l1", "l2", "nan", "inf")
PARAMS = (
    collections_param("to check (default: weights)"),
    regex_param("of tensor names to check"),
    Param(
        "num_steps", 3, 2, 1e9, integer=True, description="saved steps over which a tensor must not change"
    ),
    Param("rtol", 1e-5, 0, 1e12, description="numpy.allclose's relative tolerance"),
    Param("atol", 1e-8, 0, 1e12, description="numpy.allclose's absolute tolerance"),
    Param("equal_nan", False, description="count NaN as equal to NaN"),
)
RECOMMENDATION = (
    "A weight that does not change is not being trained: check that the optimizer holds it "
    "(model.parameters() passed after the model was built), that its learning rate is not zero, "
    "that requires_grad is set and that its gradient reaches it (no .detach() on the way)."
)


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table = out.table
    names = pick(table, params, ("weights",))
    graded = {n.split("/", 1)[1] for n in table.names(collection="gradients")}
    if graded:
        names = [
            n for n in names if not n.startswith(("weights/", "biases/")) or n.split("/", 1)[1] in graded
        ]
    if not names:
        return out.short("no weights recorded: ph.watch(model) records them")
    k = params["num_steps"]
    checked = 0
    for _, rank, name in out.each(names):
        mode = train_mode(table, name)
        steps, _ = table.series(name, "l2", mode, rank)
        if len(steps) < k:
            continue
        checked += 1
        cols = np.stack([table.series(name, s, mode, rank)[1] for s in COMPARED])  # (stats, steps)
        same = np.isclose(cols[:, 1:], cols[:, :-1], rtol=params["rtol"], atol=params["atol"],
                          equal_nan=params["equal_nan"]).all(axis=0)  # fmt: skip
        # window ending at step i (i >= k-1) is unchanged when the k-1 transitions before it are
        c = np.concatenate([[0], np.cumsum(~same)])
        window = np.zeros(len(steps), bool)
        window[k - 1 :] = (c[k - 1 :] - c[: len(steps) - k + 1]) == 0
        for a, b, _first, last in step_runs(steps, window):
            first = int(steps[a - k + 1])
            who = f"{label(name, rank, table)} ({mode})"
            msg = f"{who}: unchanged over steps {first}-{last} ({b - a + k} saved steps)"
            out.add(msg, [name], mode, rank, first, last, {"saved_steps": b - a + k, "l2": float(cols[5, a])})
    hit = out.tensors()
    return out.result(
        checked=checked,
        what="tensor(s)",
        found=f"{len(hit)} tensor(s) stopped changing ({tensor_list(hit)})",
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
