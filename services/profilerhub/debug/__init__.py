"""Read what ``ph.watch`` recorded, with smdebug's trial API (``docs/debugging.md``).

    from profilerhub.debug import create_trial
    t = create_trial("bert-ft")           # a job name or id on the hub, a local folder, s3://…
    t.tensor_names(collection="gradients"); t.steps()
    t.tensor("gradients/encoder.0.weight").reduction_value(200, "l2")
    t.tensor("losses/loss").values(mode="eval")      # {step: value}

Needs the ``analysis`` extra (numpy): the table is ``profilerhub_analysis.tensors.TensorTable``,
the same the rules, the hub and the app read. ``import profilerhub`` never imports this module.
"""

from __future__ import annotations

import enum
import io
import math
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from profilerhub_analysis.tensors import MODES, STATS, TensorTable

from ._sources import FullRef, Source, source_for


class ModeKeys(enum.Enum):
    """smdebug's modes (``GLOBAL`` means every mode's steps together)."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "predict"
    GLOBAL = "global"


class TensorUnavailable(KeyError):  # noqa: N818 - smdebug's names
    """No tensor of that name was recorded."""


class TensorUnavailableForStep(KeyError):  # noqa: N818
    """The tensor was not recorded (or not saved whole) at that step."""


class StepUnavailable(KeyError):  # noqa: N818
    """No such step in that mode (yet)."""


class NoMoreData(TimeoutError):
    """``wait_for_steps``: the job ended (or the time ran out) before those steps arrived."""


def _mode(mode: Any) -> str | None:
    if isinstance(mode, ModeKeys):
        mode = mode.value
    if mode is None or mode == "global":
        return None
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)} (or a ModeKeys), got {mode!r}")
    return str(mode)


def create_trial(
    job_or_path: str, *, hub_url: str | None = None, token: str | None = None, http: Any = None
) -> Trial:
    """A trial over one job: a hub job's name (its newest job of that name) or id, a local output
    folder (one run's ``<output>/<job>`` or a folder of runs, e.g. one per rank) or an
    ``s3://bucket/prefix[/job]`` location. The hub is ``$PROFILERHUB_URL`` with
    ``$PROFILERHUB_TOKEN`` unless given; ``http``: an httpx-style client already pointed at the hub
    and signed in (it makes ``job_or_path`` a hub job)."""
    return Trial(source_for(job_or_path, hub_url=hub_url, token=token, http=http))


class Trial:
    """One job's recorded tensors; ``refresh()`` (and ``wait_for_steps``) read what arrived since."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self._table = TensorTable.empty()
        self._full: dict[tuple[str, str, int, int], FullRef] = {}
        self.refresh()

    @property
    def name(self) -> str:
        return self._source.name

    @property
    def table(self) -> TensorTable:
        """The reductions as one ``TensorTable`` (columns, for vectorised work)."""
        return self._table

    def refresh(self) -> None:
        self._table, full = self._source.load()
        self._full = {(f.name, f.mode, f.rank, f.step): f for f in full}

    def tensor_names(
        self, regex: str | None = None, collection: str | None = None, mode: Any = None
    ) -> list[str]:
        names = self._table.names(collection=collection, regex=regex)
        m = _mode(mode) if mode is not None else None
        if m is not None:
            names = [n for n in names if self._table.steps(m, name=n)]
        return names

    def collections(self) -> list[str]:
        return self._table.collections()

    def modes(self) -> list[str]:
        return self._table.modes()

    def workers(self) -> list[int]:
        """The ranks that recorded (smdebug's workers)."""
        return self._table.ranks()

    def steps(self, mode: Any = ModeKeys.TRAIN) -> list[int]:
        """The steps of one mode (train by default), or with ``ModeKeys.GLOBAL`` / ``None`` every
        step number any mode recorded (each mode counts its own steps)."""
        return self._table.steps(_mode(mode))

    def has_passed_step(self, step: int, mode: Any = ModeKeys.TRAIN) -> bool:
        return any(s >= step for s in self.steps(mode))

    def tensor(self, name: str) -> Tensor:
        name, mode = self._resolve(name)
        return Tensor(self, name, mode)

    def has_tensor(self, name: str) -> bool:
        try:
            self._resolve(name)
        except TensorUnavailable:
            return False
        return True

    def _resolve(self, name: str) -> tuple[str, str | None]:
        if name in self._table.name_list:
            return name, None
        # "losses/train", "losses/eval": the names for the one loss in that mode
        head, _, tail = name.partition("/")
        if head == "losses" and tail in MODES and "losses/loss" in self._table.name_list:
            return "losses/loss", tail
        raise TensorUnavailable(f"no tensor {name!r} in {self.name} (names: tensor_names())")

    def wait_for_steps(
        self, required_steps: Iterable[int], mode: Any = ModeKeys.TRAIN, *, timeout: float | None = None
    ) -> None:
        """Block until every step in ``required_steps`` was recorded in ``mode``; ``NoMoreData``
        when the job ends (or ``timeout`` seconds pass) first."""
        wanted = set(required_steps)
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.2
        while True:
            self.refresh()
            have = set(self.steps(mode))
            if wanted <= have:
                return
            if self._source.finished():
                self.refresh()
                if wanted <= set(self.steps(mode)):
                    return
                raise NoMoreData(f"{self.name} ended without steps {sorted(wanted - have)}")
            if deadline is not None and time.monotonic() >= deadline:
                raise NoMoreData(f"steps {sorted(wanted - have)} did not arrive in {timeout} s")
            time.sleep(delay)  # polling a store: nothing to wait on but time
            delay = min(delay * 2, 5.0)


class Tensor:
    """One recorded tensor (smdebug's ``Tensor``); ``mode``/``worker`` default to train and rank 0."""

    def __init__(self, trial: Trial, name: str, mode: str | None = None) -> None:
        self.trial = trial
        self.name = name
        self._mode = mode

    def _m(self, mode: Any) -> str:
        return _mode(mode) or self._mode or "train"

    def workers(self) -> list[int]:
        t = self.trial.table
        return [r for r in t.ranks() if t.steps(name=self.name, rank=r)]

    def steps(self, mode: Any = None, worker: int | None = None) -> list[int]:
        """The steps this tensor was recorded at in ``mode`` (train by default; ``GLOBAL``: any)."""
        m = self._mode or "train" if mode is None else _mode(mode)
        return self.trial.table.steps(m, name=self.name, rank=worker)

    def shape(self) -> tuple[int, ...]:
        return self.trial.table.shape(self.name)

    def reduction_value(
        self, step: int, reduction_name: str, mode: Any = None, worker: int = 0, abs: bool = False
    ) -> float:
        """A statistic at ``step``: ``STATS`` (min, max, mean, std, l1, l2, nan, inf, zero_frac,
        numel, dead_frac) and smdebug's ``variance``, ``sum``; ``abs=True`` reads it on |x|
        (max, mean, sum; min when the tensor does not change sign)."""
        row = self._row(step, self._m(mode), worker)
        return _reduction(row, reduction_name, abs)

    def reduction_values(self, step: int, mode: Any = None, worker: int = 0) -> dict[str, float]:
        return self._row(step, self._m(mode), worker)

    def _row(self, step: int, mode: str, worker: int) -> dict[str, float]:
        t = self.trial.table
        steps, _ = t.series(self.name, "l2", mode, worker)
        hit = np.flatnonzero(steps == step)
        if not hit.size:
            raise TensorUnavailableForStep(f"{self.name} has no {mode} step {step} on worker {worker}")
        rows = t.rows(self.name, mode, worker)
        return {s: float(rows.stats[s][hit[0]]) for s in STATS}

    def value(self, step: int, mode: Any = None, worker: int = 0) -> np.ndarray:
        """The whole tensor at ``step``: saved with ``ph.watch(full_tensors=…)``, or a one-element
        tensor (a loss), whose reductions are its value."""
        m = self._m(mode)
        ref = self.trial._full.get((self.name, m, worker, step))
        if ref is not None:
            full: np.ndarray = np.load(io.BytesIO(self.trial._source.read_full(ref)), allow_pickle=False)
            return full
        row = self._row(step, m, worker)
        if row["numel"] == 1:
            v = row["mean"] if row["nan"] == 0 and row["inf"] == 0 else _nonfinite(row)
            return np.array(v).reshape(self.shape())
        raise TensorUnavailableForStep(
            f"{self.name} was not saved whole at {m} step {step}: ph.watch(full_tensors=[...]) saves it"
        )

    def values(self, mode: Any = None, worker: int = 0) -> dict[int, Any]:
        """``{step: value}`` for every step ``value`` can answer (a loss: a float)."""
        m = self._m(mode)
        out: dict[int, Any] = {}
        for step in self.trial.table.steps(m, name=self.name, rank=worker):
            try:
                v = self.value(step, m, worker)
            except TensorUnavailableForStep:
                continue
            out[step] = float(v) if v.size == 1 else v
        return out


def _nonfinite(row: dict[str, float]) -> float:
    return math.nan if row["nan"] else math.inf if row["max"] != row["max"] else row["max"]


def _reduction(row: dict[str, float], name: str, use_abs: bool) -> float:
    n_finite = row["numel"] - row["nan"] - row["inf"]
    if name == "variance":
        return row["std"] ** 2
    if name == "sum":
        return (row["l1"] if use_abs else row["mean"] * n_finite) if n_finite else math.nan
    if not use_abs or name in ("l1", "l2", "nan", "inf", "zero_frac", "numel", "dead_frac", "std"):
        if name not in row:
            raise ValueError(f"unknown reduction {name!r}; one of {', '.join(STATS)}, variance, sum")
        return row[name]
    lo, hi = row["min"], row["max"]
    if name == "max":
        return max(abs(lo), abs(hi))
    if name == "mean":
        return row["l1"] / n_finite if n_finite else math.nan
    if name == "min":
        if lo >= 0 or hi <= 0:
            return min(abs(lo), abs(hi))
        raise ValueError(
            "min of |x| is not recorded for a tensor that changes sign (the histogram bounds it)"
        )
    raise ValueError(f"unknown reduction {name!r}; one of {', '.join(STATS)}, variance, sum")


__all__ = [
    "ModeKeys",
    "NoMoreData",
    "StepUnavailable",
    "Tensor",
    "TensorUnavailable",
    "TensorUnavailableForStep",
    "Trial",
    "create_trial",
]
