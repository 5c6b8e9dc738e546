"""LossNotDecreasing: the loss does not fall by ``diff_percent`` % over ``num_steps`` steps.

Checked every ``num_steps`` steps of the mode (``mode``; by default eval when the job has eval
losses, else train, as SageMaker orders EVAL, TRAIN, GLOBAL): the mean loss over the last
``num_steps`` steps ``(s - num_steps, s]`` against the mean over the ``num_steps`` before them.
SageMaker compares two single values; on a minibatch loss that flags noise, so ProfilerHub
compares the means of the two windows (a window with no saved loss is skipped). A check fails when
``mean_now >= mean_before - |mean_before| * diff_percent / 100``; consecutive failed checks are one
finding. ``collection_names`` / ``tensor_regex`` pick other scalar tensors than the ``losses``
collection (``use_losses_collection``: include it, default true)."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import Param, RuleResult, RuleSpec, not_enough
from profilerhub_analysis.rules.model._common import (
    Collected,
    collections_param,
    fig,
    label,
    pick,
    regex_param,
    sig,
    step_runs,
    tensor_rule,
)
from profilerhub_analysis.rules.model._losses import values, window_mean

NAME = "LossNotDecreasing"
MODES = ("", "train", "eval", "predict", "global", "TRAIN", "EVAL", "PREDICT", "GLOBAL")
PARAMS = (
    Param("num_steps", 10, 1, 1e9, integer=True, description="steps between checks and in each window"),
    Param("diff_percent", 0, 0, 100, description="minimum decrease (%) between windows"),
    Param("mode", "", choices=MODES, description="mode to check (default: eval, else train)"),
    collections_param("of scalar tensors to check"),
    regex_param("of scalar tensors to check"),
    Param("use_losses_collection", True, description="check the losses collection too"),
)
RECOMMENDATION = (
    "The loss has stopped falling. Check the learning rate (too high oscillates, too low crawls) "
    "and its schedule, that the optimizer steps the model's parameters and zero_grad() is called, "
    "and that labels match the inputs; a plateau at the end of training may simply be convergence."
)


def _mode(table: Any, names: list[str], wanted: str) -> str | None:
    wanted = wanted.lower()
    if wanted == "global":
        wanted = "train"  # train steps are the job's global steps
    have = [m for m in table.modes() if any(len(table.steps(mode=m, name=n)) for n in names)]
    if wanted:
        return wanted if wanted in have else None
    return next((m for m in ("eval", "train", "predict") if m in have), None)


def checks(
    steps: np.ndarray, v: np.ndarray, n: int, diff: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(check step, mean before, mean now, failed)`` for each check every ``n`` steps."""
    if not len(steps):
        z = np.zeros(0)
        return z.astype(np.int64), z, z, z.astype(bool)
    at = np.arange(int(steps[0]) + 2 * n - 1, int(steps[-1]) + 1, n)
    before = np.array([window_mean(steps, v, s - 2 * n, s - n) for s in at.tolist()])
    now = np.array([window_mean(steps, v, s - n, s) for s in at.tolist()])
    ok = np.isfinite(before) & np.isfinite(now)
    failed = ok & (now >= before - np.abs(before) * diff / 100)
    return at[ok], before[ok], now[ok], failed[ok]


@tensor_rule(NAME, RECOMMENDATION)
def evaluate(out: Collected, params: dict[str, Any]) -> RuleResult:
    table, data = out.table, out.data
    chosen = {k: params[k] for k in ("collection_names", "tensor_regex")}
    names = pick(table, chosen, ("losses",)) if any(chosen.values()) else []
    if params["use_losses_collection"] or not names:
        names = sorted(set(names) | set(table.names(collection="losses")))
    if not names:
        return out.short("no losses recorded: pass loss_fn to ph.watch")
    mode = _mode(table, names, params["mode"])
    if mode is None:
        return out.short(f"no losses in mode {params['mode'] or 'eval or train'}")
    n, diff = params["num_steps"], params["diff_percent"]
    checked = 0
    for _, rank, name in out.each(names, [mode]):
        steps, v = values(table, name, mode, rank)
        at, before, now, failed = checks(steps, v, n, diff)
        checked += bool(len(at))
        for a, b, first, last in step_runs(at, failed):
            msg = (
                f"{label(name, rank, table)} ({mode}): mean loss {sig(now[a])} over steps "
                f"{first - n + 1}-{first} is not below {sig(before[a])} over the {n} steps before"
                + (f", nor at the {b - a} checks after it (to step {last})" if b > a else "")
            )
            start = max(first - 2 * n + 1, int(steps[0]))
            figures = {"mean_before": fig(before[a]), "mean_now": fig(now[a]), "checks_failed": b - a + 1}
            out.flag(msg, name, mode, rank, start, last, figures, steps, v)
    if not checked and not out.findings:
        return not_enough(NAME, data, params, f"fewer than {2 * n} {mode} steps of loss")
    return out.result(
        checked=checked,
        what=f"{mode} loss series",
        found=lambda fs: f"{fs[0].message}",
        figures={"mode": mode},
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
