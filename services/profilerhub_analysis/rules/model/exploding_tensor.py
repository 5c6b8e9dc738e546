"""ExplodingTensor: tensors with NaN or infinite values (only NaN with ``only_nan``), in every
mode; ``collection_names`` / ``tensor_regex`` narrow the tensors (default: all, losses included).
A finding per tensor, mode, rank and run of steps with non-finite values."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import Param, RuleData, RuleResult, RuleSpec
from profilerhub_analysis.rules.model._common import (
    Collected,
    label,
    pick,
    ranks,
    short,
    step_runs,
    table_of,
    tensor_list,
)

NAME = "ExplodingTensor"
PARAMS = (
    Param("only_nan", False, description="watch for NaN only, not for infinity"),
    Param("collection_names", "", description="comma-separated collections to inspect (default: all)"),
    Param("tensor_regex", "", description="comma-separated regexes of tensor names to inspect"),
)
RECOMMENDATION = (
    "A NaN or Inf spreads to every weight within a step. Lower the learning rate, clip gradients "
    "(torch.nn.utils.clip_grad_norm_), look for log(0), division by zero or exp overflow in the "
    "loss, and with mixed precision use a GradScaler."
)


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    table = table_of(NAME, data, params)
    if isinstance(table, RuleResult):
        return table
    names = pick(table, params, ())
    if not names:
        return short(NAME, data, params, "no tensor matches collection_names / tensor_regex")
    out = Collected(data, table)
    for mode in table.modes():
        for rank in ranks(table):
            for name in names:
                steps, nan = table.series(name, "nan", mode, rank)
                if not len(steps):
                    continue
                _, inf = table.series(name, "inf", mode, rank)
                bad = nan if params["only_nan"] else nan + inf
                for a, b, first, last in step_runs(steps, bad > 0):
                    n_nan, n_inf = int(nan[a : b + 1].max()), int(inf[a : b + 1].max())
                    what = f"{n_nan} NaN" if params["only_nan"] else f"{n_nan} NaN, {n_inf} Inf"
                    msg = f"{label(name, rank, table)} ({mode}): {what} at steps {first}-{last}"
                    out.add(
                        msg,
                        [name],
                        mode,
                        rank,
                        first,
                        last,
                        {"nan": n_nan, "inf": n_inf, "first_step": first},
                    )
                    out.see(name, steps, np.asarray(bad, np.float64))
    hit = out.tensors()
    kind = "NaN" if params["only_nan"] else "NaN/Inf"
    return out.result(
        NAME,
        params,
        checked=len(names),
        what="tensor(s)",
        found=f"{len(hit)} tensor(s) hold {kind} ({tensor_list(hit)})",
        recommendation=RECOMMENDATION,
    )


SPEC = RuleSpec(NAME, PARAMS, evaluate, __doc__.splitlines()[0] if __doc__ else NAME)
