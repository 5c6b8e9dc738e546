"""ClassImbalance: the training labels are dominated by some classes.

The labels are the ``labels`` collection's tensors matching ``labels_regex`` (``ph.watch``
records ``loss_fn``'s target there). Over the train steps, the samples of each class are counted;
once at least ``samples`` labels have been seen, a largest/smallest class count above
``threshold_imbalance`` is a finding. Counts per class come from the table's ``class_counts``
when the SDK records them; labels of two classes (0 and 1) are counted exactly from the reductions
(``zero_frac`` is class 0's share). SageMaker's misprediction check (``threshold_misprediction``,
``predictions_regex``, ``argmax``) needs each sample's label beside its prediction, which
reductions do not keep: those parameters are accepted and not used."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import Param, RuleResult, RuleSpec, not_enough
from profilerhub_analysis.rules.model._common import Collected, fig, label, sig, tensor_rule

NAME = "ClassImbalance"
PARAMS = (
    Param("threshold_imbalance", 10, 1, 1e12, description="largest/smallest class count that triggers"),
    Param(
        "threshold_misprediction", 0.7, 0, 1, description="(accepted for SageMaker compatibility, not used)"
    ),
    Param("samples", 500, 1, 1e12, integer=True, description="labels counted before the rule decides"),
    Param("argmax", False, description="(accepted for SageMaker compatibility, not used)"),
    Param("labels_regex", ".*labels", description="regex of the labels tensors"),
    Param(
        "predictions_regex", ".*predictions", description="(accepted for SageMaker compatibility, not used)"
    ),
)
RECOMMENDATION = (
    "Rare classes get few updates and are mispredicted. Resample (torch.utils.data."
    "WeightedRandomSampler), weight the loss per class (CrossEntropyLoss(weight=…)), or collect "
    "more examples of the rare classes."
)


def class_counts(table: Any, name: str, rank: int) -> np.ndarray | None:
    """Samples per class summed over the train steps, or None if the table cannot tell."""
    get = getattr(table, "class_counts", None)
    if get is not None:
        try:
            _, counts = get(name, "train", rank)
            return np.asarray(counts, np.float64).sum(axis=0)
        except (KeyError, ValueError):
            pass
    steps, lo = table.series(name, "min", "train", rank)
    if not len(steps):
        return None
    _, hi = table.series(name, "max", "train", rank)
    _, zf = table.series(name, "zero_frac", "train", rank)
    _, n = table.series(name, "numel", "train", rank)
    if np.nanmin(lo) < 0 or np.nanmax(hi) > 1:
        return None  # more than two classes: needs class_counts
    zeros = float(np.nansum(zf * n))
    return np.array([zeros, float(np.nansum(n)) - zeros])


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table, data = out.table, out.data
    pattern = re.compile(params["labels_regex"])
    names = [n for n in table.names(collection="labels") if pattern.search(n)]
    if not names:
        return out.short(
            "no labels collection: ph.watch(…, loss_fn=criterion) records the loss's targets",
        )
    figures: dict[str, Any] = {}
    checked = 0
    for _, rank, name in out.each(names):
        counts = class_counts(table, name, rank)
        if counts is None:
            continue
        total = float(counts.sum())
        if total < params["samples"]:
            continue
        checked += 1
        present = counts[counts > 0]
        ratio = float(present.max() / present.min()) if len(present) > 1 else float("inf")
        figures[label(name, rank, table)] = {"samples": int(total), "classes": int(len(present)),
                                              "imbalance": fig(ratio)}  # fmt: skip
        if ratio > params["threshold_imbalance"]:
            big, small = int(np.argmax(counts)), int(np.argmin(np.where(counts > 0, counts, np.inf)))
            steps = table.steps(mode="train", name=name, rank=rank)
            msg = (
                f"{label(name, rank, table)}: class {big} has {sig(ratio)}x the samples of class {small} "
                f"({int(counts[big])} vs {int(counts[small])} of {int(total)})"
            )
            out.add(
                msg,
                [name],
                "train",
                rank,
                steps[0],
                steps[-1],
                {"imbalance": fig(ratio), "largest_class": big, "smallest_class": small},
            )
    if not checked and not out.findings:
        what = f"fewer than {params['samples']} labels counted (or more classes than two without counts)"
        return not_enough(NAME, data, params, what)
    return out.result(
        checked=checked,
        what="label tensor(s)",
        found=lambda fs: fs[0].message,
        figures=figures,
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
