"""Overtraining: training goes on while the validation loss no longer improves.

The validation loss (one value per evaluation, ``_losses``) reaches a new optimum when it falls
more than ``delta`` (absolute) below the best so far. Once ``patience_validation`` evaluations pass
without one, while the training loss still improved since that best evaluation (the mean of its
last ``patience_train`` values before the current evaluation is below the mean of its last
``patience_train`` values before the best one), the run is overtraining: more steps fit the
training set and do nothing for unseen data. A run where both losses stopped improving has
converged instead (LossNotDecreasing's concern), not flagged here."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import Param, RuleResult, RuleSpec
from profilerhub_analysis.rules.model._common import (
    Collected,
    fig,
    label,
    ranks,
    sig,
    tensor_rule,
)
from profilerhub_analysis.rules.model._losses import evaluations, loss_names, train_eval_pairs, values
from profilerhub_analysis.rules.model.overfit import NO_EVAL

NAME = "Overtraining"
PARAMS = (
    Param(
        "patience_train",
        5,
        1,
        1e9,
        integer=True,
        description="training losses averaged to tell it still improves",
    ),
    Param(
        "patience_validation",
        10,
        1,
        1e9,
        integer=True,
        description="evaluations without a new validation optimum",
    ),
    Param(
        "delta",
        0.1,
        0,
        1e12,
        description="how far below the best a validation loss must fall to be a new optimum",
    ),
)
RECOMMENDATION = (
    "Stop training at the best evaluation (early stopping: keep the checkpoint of the lowest "
    "validation loss), or regularise so that more steps keep helping unseen data."
)


def _tail_mean(steps: np.ndarray, v: np.ndarray, upto: int, n: int) -> float:
    sel = (steps <= upto) & np.isfinite(v)
    tail = v[sel][-n:]
    return float(tail.mean()) if len(tail) else float("nan")


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table = out.table
    names = loss_names(table)
    if not names:
        return out.short("no losses recorded: pass loss_fn to ph.watch")
    pairs = train_eval_pairs(table, names, ranks(table))
    if not pairs:
        return out.short(NO_EVAL)
    pv, pt, delta = params["patience_validation"], params["patience_train"], params["delta"]
    for name, rank in pairs:
        g, val = evaluations(table, name, rank)
        ts, tv = values(table, name, "train", rank)
        best_i, best = -1, np.inf
        for i, v in enumerate(val.tolist()):
            if not np.isfinite(v):
                continue
            if best_i < 0 or v < best - delta:
                best_i, best = i, v
                continue
            if i - best_i < pv:
                continue
            then = _tail_mean(ts, tv, int(g[best_i]), pt)
            now = _tail_mean(ts, tv, int(g[i]), pt)
            if not now < then:
                continue
            msg = (
                f"{label(name, rank, table)}: no validation optimum for {i - best_i} evaluations since step "
                f"{int(g[best_i])} (best {sig(best)}, now {sig(v)}) while the training loss fell from "
                f"{sig(then)} to {sig(now)}"
            )
            out.add(
                msg,
                [name],
                "train",
                rank,
                int(g[best_i]),
                int(g[i]),
                {
                    "best_step": int(g[best_i]),
                    "best_validation_loss": fig(best),
                    "validation_loss": fig(v),
                    "training_loss_then": fig(then),
                    "training_loss_now": fig(now),
                    "evaluations_since_best": i - best_i,
                },
            )
            out.see(f"{name}:eval", g, val)
            break
    return out.result(
        checked=len(pairs),
        what="train/eval loss pair(s)",
        found=lambda fs: (
            f"the validation loss has not improved since step {fs[0].figures['best_step']} "
            f"({fs[0].figures['evaluations_since_best']} evaluations) while the training loss kept falling"
        ),
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
