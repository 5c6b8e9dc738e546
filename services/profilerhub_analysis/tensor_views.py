"""What the Model page draws beyond one tensor's series (``tensors_api``): the per-layer heat map
of one collection (with the global norm per step) and a tensor's histogram over steps as shares
of its finite values. Pure functions of a ``TensorTable``; ``TensorQueryError`` for a bad
statistic or mode, ``KeyError`` for an unknown tensor."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.tensors import HIST_EDGES, MODES, STATS, TensorTable
from profilerhub_analysis.tensors_api import TensorQueryError

MAX_COLUMNS = 1000
"""Steps a heat map answers at most (evenly picked, the first and last kept)."""
MAX_HIST_COLUMNS = 400


def _plain(values: np.ndarray) -> list[float | None]:
    """Floats for JSON (6 significant digits), NaN and ±inf as null."""
    return [
        None if not np.isfinite(v) else float(f"{v:.6g}") for v in np.asarray(values, np.float64).tolist()
    ]


def _pick(n: int, limit: int) -> np.ndarray:
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))


def _check(stat: str, mode: str) -> None:
    if stat not in STATS:
        raise TensorQueryError(f"stat must be one of {', '.join(STATS)}, got {stat!r}")
    if mode not in MODES:
        raise TensorQueryError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


def matrix(
    table: TensorTable, collection: str, stat: str, mode: str = "train", rank: int = 0
) -> dict[str, Any]:
    """One row per tensor of ``collection``, one column per step (at most ``MAX_COLUMNS``),
    null where a tensor has no row; for ``l2`` also ``total``, the global norm per step
    (``sqrt(sum l2^2)`` over the rows recorded at that step)."""
    _check(stat, mode)
    names = table.names(collection=collection)
    steps, values = table.matrix(names, stat, mode, rank)
    keep = _pick(len(steps), MAX_COLUMNS)
    values = values[:, keep]
    out: dict[str, Any] = {
        "collection": collection,
        "stat": stat,
        "mode": mode,
        "rank": rank,
        "names": names,
        "steps": steps[keep].tolist(),
        "values": [_plain(row) for row in values],
    }
    if stat == "l2" and names:
        with np.errstate(invalid="ignore"):
            total = np.sqrt(np.nansum(values**2, axis=0))
        total[np.all(np.isnan(values), axis=0)] = np.nan
        out["total"] = _plain(total)
    return out


def hist_shares(table: TensorTable, name: str, mode: str = "train", rank: int = 0) -> dict[str, Any]:
    """A tensor's magnitude histogram per step (at most ``MAX_HIST_COLUMNS``), each row as shares
    of its finite values: TensorBoard's distribution view; bins as ``tensors.HIST_EDGES``."""
    _check("numel", mode)
    if name not in table.name_list:
        raise KeyError(f"no tensor {name!r}")
    steps, counts = table.hist(name, mode, rank)
    keep = _pick(len(steps), MAX_HIST_COLUMNS)
    c = counts[keep].astype(np.float64)
    total = c.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, c / total, np.nan)
    return {
        "name": name,
        "mode": mode,
        "rank": rank,
        "steps": steps[keep].tolist(),
        "edges": HIST_EDGES.tolist(),
        "fractions": [_plain(row) for row in share],
    }


__all__ = ["MAX_COLUMNS", "hist_shares", "matrix"]
