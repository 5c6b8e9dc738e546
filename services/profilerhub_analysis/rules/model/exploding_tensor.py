"""ExplodingTensor: tensors with NaN or infinite values (only NaN with ``only_nan``), in every
mode; ``collection_names`` / ``tensor_regex`` narrow the tensors (default: all, losses included).
A finding per tensor, mode, rank and run of steps with non-finite values."""

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
)

NAME = "ExplodingTensor"
PARAMS = (
    Param("only_nan", False, description="watch for NaN only, not for infinity"),
    collections_param("to inspect (default: all)"),
    regex_param("of tensor names to inspect"),
)
RECOMMENDATION = (
    "A NaN or Inf spreads to every weight within a step. Lower the learning rate, clip gradients "
    "(torch.nn.utils.clip_grad_norm_), look for log(0), division by zero or exp overflow in the "
    "loss, and with mixed precision use a GradScaler."
)


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table = out.table
    names = pick(table, params, ())
    if not names:
        return out.short("no tensor matches collection_names / tensor_regex")
    for mode, rank, name in out.each(names, table.modes()):
        steps, nan = table.series(name, "nan", mode, rank)
        if not len(steps):
            continue
        _, inf = table.series(name, "inf", mode, rank)
        bad = nan if params["only_nan"] else nan + inf
        for a, b, first, last in step_runs(steps, bad > 0):
            n_nan, n_inf = int(nan[a : b + 1].max()), int(inf[a : b + 1].max())
            what = f"{n_nan} NaN" if params["only_nan"] else f"{n_nan} NaN, {n_inf} Inf"
            msg = f"{label(name, rank, table)} ({mode}): {what} at steps {first}-{last}"
            figures = {"nan": n_nan, "inf": n_inf, "first_step": first}
            out.flag(msg, name, mode, rank, first, last, figures, steps, np.asarray(bad, np.float64))
    hit = out.tensors()
    kind = "NaN" if params["only_nan"] else "NaN/Inf"
    return out.result(
        checked=len(names), what="tensor(s)", found=f"{len(hit)} tensor(s) hold {kind} ({tensor_list(hit)})"
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
