"""Losses as the loss rules read them: the ``losses`` collection's values by mode.

A loss tensor is a scalar, so its ``mean`` is its value (NaN when the loss was not finite). Train
losses are by ``ph.step`` number. Eval losses have their own step counter (one per forward of the
watched model) and the train step current when they were computed (``global_step``); the rows
sharing one ``global_step`` are one *evaluation*, whose value is their mean: that is the
validation loss the train loss is compared with."""

from __future__ import annotations

import re

import numpy as np

from profilerhub_analysis.rules.base import split_list
from profilerhub_analysis.tensors import TensorTable


def loss_names(table: TensorTable, regex: str = "") -> list[str]:
    """The loss tensors (``losses/…``) matching any of ``regex``'s comma-separated patterns."""
    patterns = [re.compile(p) for p in split_list(regex)]
    return [n for n in table.names(collection="losses") if not patterns or any(p.search(n) for p in patterns)]


def values(table: TensorTable, name: str, mode: str, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, loss)`` in ``mode``'s own steps."""
    return table.series(name, "mean", mode, rank)


def evaluations(
    table: TensorTable, name: str, rank: int, mode: str = "eval"
) -> tuple[np.ndarray, np.ndarray]:
    """``(train step, mean loss)`` of each evaluation: ``mode``'s rows grouped by ``global_step``."""
    steps, v = table.series(name, "mean", mode, rank)
    if not len(steps):
        return np.zeros(0, np.int64), np.zeros(0)
    g = table.global_steps(name, mode, rank)
    order = np.argsort(g, kind="stable")
    g, v = g[order], v[order]
    uniq, start = np.unique(g, return_index=True)
    sums = np.add.reduceat(np.where(np.isfinite(v), v, 0.0), start)
    counts = np.add.reduceat(np.isfinite(v).astype(np.float64), start)
    with np.errstate(invalid="ignore", divide="ignore"):
        return uniq.astype(np.int64), sums / counts


def train_eval_pairs(table: TensorTable, names: list[str], ranks: list[int]) -> list[tuple[str, int]]:
    """``(loss, rank)`` of each loss recorded in both train and eval."""
    return [
        (n, r)
        for n in names
        for r in ranks
        if len(table.steps(mode="eval", name=n, rank=r)) and len(table.steps(mode="train", name=n, rank=r))
    ]


def window_mean(steps: np.ndarray, v: np.ndarray, lo: float, hi: float) -> float:
    """Mean of the finite ``v`` at steps in ``(lo, hi]`` (NaN if none)."""
    sel = (steps > lo) & (steps <= hi) & np.isfinite(v)
    return float(v[sel].mean()) if sel.any() else float("nan")


__all__ = ["evaluations", "loss_names", "train_eval_pairs", "values", "window_mean"]
