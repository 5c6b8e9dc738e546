"""Overfit: the validation loss pulls away from the training loss.

At each evaluation (eval losses computed at one train step ``g``, ``g >= start_step``) the ratio
``(mean validation loss - mean training loss) / |mean training loss|`` is taken, the training
loss averaged over the train steps since the previous evaluation (``(g_prev, g]``). When it exceeds
``ratio_threshold`` at ``patience`` evaluations in a row (SageMaker: 1), the model overfits: a
finding per such run, from the first evaluation over the threshold."""

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
    step_runs,
    tensor_rule,
)
from profilerhub_analysis.rules.model._losses import (
    evaluations,
    loss_names,
    train_eval_pairs,
    values,
    window_mean,
)

NAME = "Overfit"
PARAMS = (
    Param("tensor_regex", "", description="comma-separated regexes of the loss tensors to compare"),
    Param("start_step", 0, 0, 1e12, integer=True, description="train step from which to compare"),
    Param(
        "patience", 1, 1, 1e9, integer=True, description="evaluations in a row over the ratio that trigger"
    ),
    Param(
        "ratio_threshold", 0.1, 0, 1e12, description="(validation - training) / training loss that triggers"
    ),
)
RECOMMENDATION = (
    "The model fits the training set better than data it has not seen. Regularise (weight decay, "
    "dropout, data augmentation), get more training data, use a smaller model, or stop at the "
    "evaluation where the validation loss was lowest (early stopping)."
)
NO_EVAL = 'no eval losses: compute the validation loss under `with ph.mode("eval"):` (ph.watch\'s loss_fn)'


def ratios(
    table: Any, name: str, rank: int, start_step: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(train step, validation mean, training mean, ratio)`` per evaluation at or after ``start_step``."""
    g, val = evaluations(table, name, rank)
    ts, tv = values(table, name, "train", rank)
    prev = np.concatenate([[-np.inf], g[:-1]]).astype(np.float64)[: len(g)]
    keep = g >= start_step
    g, val, prev = g[keep], val[keep], prev[keep]
    train = np.array([window_mean(ts, tv, lo, hi) for lo, hi in zip(prev.tolist(), g.tolist(), strict=True)])
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (val - train) / np.abs(train)
    return g, val, train, ratio


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table = out.table
    names = loss_names(table, params["tensor_regex"])
    if not names:
        return out.short("no losses recorded: pass loss_fn to ph.watch")
    pairs = train_eval_pairs(table, names, ranks(table))
    if not pairs:
        return out.short(NO_EVAL)
    worst = -np.inf
    for name, rank in pairs:
        g, val, train, ratio = ratios(table, name, rank, params["start_step"])
        over = np.nan_to_num(ratio, nan=-np.inf) > params["ratio_threshold"]
        if len(ratio) and np.isfinite(ratio).any():
            worst = max(worst, float(np.nanmax(ratio)))
        for a, b, first, last in step_runs(g, over):
            if b - a + 1 < params["patience"]:
                continue
            top = int(a + np.nanargmax(ratio[a : b + 1]))
            msg = (
                f"{label(name, rank, table)}: validation loss {sig(val[top])} vs training {sig(train[top])} "
                f"(ratio {sig(ratio[top])} > {sig(params['ratio_threshold'])}) "
                f"at evaluations of steps {first}-{last}"
            )
            out.add(
                msg,
                [name],
                "train",
                rank,
                first,
                last,
                {
                    "validation_loss": fig(val[top]),
                    "training_loss": fig(train[top]),
                    "ratio": fig(ratio[top]),
                    "evaluations": b - a + 1,
                },
            )
            out.see(f"{name}:ratio", g, ratio)
    return out.result(
        checked=len(pairs),
        what="train/eval loss pair(s)",
        found=lambda fs: (
            f"validation loss {fs[0].figures['validation_loss']} vs training loss "
            f"{fs[0].figures['training_loss']}: ratio {fs[0].figures['ratio']} "
            f"> {sig(params['ratio_threshold'])}"
        ),
        figures={"max_ratio": fig(worst)},
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
