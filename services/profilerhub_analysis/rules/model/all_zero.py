"""AllZero: tensors whose share of zeros reaches ``threshold`` % (SageMaker's 100: all zero).

Per tensor, rank and saved step of each mode: ``zero_frac``. SageMaker asks for
``collection_names`` or ``tensor_regex``; without them ProfilerHub checks weights, gradients and
activations (not biases, which often start at zero on purpose, nor losses). A finding per tensor
and run of steps."""

from __future__ import annotations

from typing import Any

from profilerhub_analysis.rules.base import Param, RuleResult, RuleSpec
from profilerhub_analysis.rules.model._common import (
    Collected,
    collections_param,
    fig,
    label,
    pick,
    regex_param,
    step_runs,
    tensor_list,
    tensor_rule,
)

NAME = "AllZero"
PARAMS = (
    collections_param("(default: weights, gradients, activations)"),
    regex_param("of tensor names to check"),
    Param("threshold", 100, 0, 100, description="percentage of zero values that triggers"),
)
RECOMMENDATION = (
    "An all-zero weight never breaks symmetry (initialise it randomly); an all-zero gradient or "
    "activation means no signal flows through that layer (dead ReLUs, a detached branch, a mask "
    "that removes everything)."
)
EPS = 1e-12


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table = out.table
    names = pick(table, params, ("weights", "gradients", "activations"))
    if not names:
        return out.short("no weights, gradients or activations recorded (or none matches)")
    limit = params["threshold"] / 100
    for mode, rank, name in out.each(names, table.modes()):
        steps, zf = table.series(name, "zero_frac", mode, rank)
        for a, b, first, last in step_runs(steps, zf >= limit - EPS):
            share = float(zf[a : b + 1].max())
            msg = f"{label(name, rank, table)} ({mode}): {share:.1%} zeros at steps {first}-{last}"
            out.flag(msg, name, mode, rank, first, last, {"zero_percent": fig(100 * share)}, steps, zf * 100)
    hit = out.tensors()
    return out.result(
        checked=len(names),
        what="tensor(s)",
        found=f"{len(hit)} tensor(s) at least {params['threshold']:g} % zero ({tensor_list(hit)})",
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
