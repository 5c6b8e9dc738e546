"""TensorVariance: tensors whose variance is very high or very low.

Per tensor (default: weights and gradients; ``collection_names`` / ``tensor_regex`` choose others),
rank and saved step of each mode: variance = ``std ** 2`` over the finite elements, against
``max_threshold`` and ``min_threshold``. SageMaker leaves both unset by default, which checks
nothing; ProfilerHub sets them where no trained network goes: 1e4 (a standard deviation of 100)
and 1e-20 (a standard deviation of 1e-10: constant, all-equal). Set one to ``null`` to skip it.
Tensors of one element have no variance and are skipped."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import Param, RuleResult, RuleSpec
from profilerhub_analysis.rules.model._common import (
    Collected,
    collections_param,
    fig,
    label,
    pick,
    regex_param,
    sig,
    step_runs,
    tensor_list,
    tensor_rule,
)

NAME = "TensorVariance"
PARAMS = (
    collections_param("(default: weights, gradients)"),
    regex_param("of tensor names to check"),
    Param(
        "max_threshold",
        1e4,
        0,
        1e300,
        description="variance above which a tensor triggers (null: no upper bound)",
        optional=True,
    ),
    Param(
        "min_threshold",
        1e-20,
        0,
        1e300,
        description="variance below which a tensor triggers (null: no lower bound)",
        optional=True,
    ),
)
RECOMMENDATION = (
    "A very high variance precedes exploding values and saturated units; a variance near zero "
    "means all elements are equal (a constant initialisation, or a layer that stopped learning). "
    "Check the initialisation, normalisation layers and the learning rate."
)


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table = out.table
    names = [
        n for n in pick(table, params, ("weights", "gradients")) if int(np.prod(table.shape(n) or (1,))) > 1
    ]
    if not names:
        return out.short("no weights or gradients recorded (or none matches)")
    hi, lo = params["max_threshold"], params["min_threshold"]
    for mode, rank, name in out.each(names, table.modes()):
        steps, std = table.series(name, "std", mode, rank)
        if not len(steps):
            continue
        var = std * std
        checks = []
        if hi is not None:
            checks.append((np.nan_to_num(var, nan=-np.inf) > hi, "high", ">", hi))
        if lo is not None:
            checks.append((np.nan_to_num(var, nan=np.inf) < lo, "low", "<", lo))
        for mask, what, sign, limit in checks:
            for a, b, first, last in step_runs(steps, mask):
                seg = var[a : b + 1]
                worst = float(seg.max() if what == "high" else seg.min())
                msg = (
                    f"{label(name, rank, table)} ({mode}): variance {sig(worst)} {sign} {sig(limit)} "
                    f"at steps {first}-{last}"
                )
                out.flag(
                    msg, name, mode, rank, first, last, {"variance": fig(worst), "too": what}, steps, var
                )
    hit = out.tensors()
    return out.result(
        checked=len(names),
        what="tensor(s)",
        found=lambda fs: (
            f"{len(hit)} tensor(s) with variance too {fs[0].figures['too']} ({tensor_list(hit)})"
        ),
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
