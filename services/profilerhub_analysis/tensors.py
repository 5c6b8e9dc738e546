"""Model-debugging reductions: what ``ph.watch`` records per tensor and saved step, as one table.

The SDK reduces every watched tensor (a weight, a gradient, a module's output, a loss, an optimizer
update) once per saved step, on the tensor's own device, to ``STATS`` and a fixed log-magnitude
histogram (``HIST_EDGES``), and ships one record per (mode, rank, step) in
``tensors/*.jsonl.gz`` (``docs/debugging.md``). This module is the one definition of those
reductions and of the table the rules, the reading APIs and the trial read them from. Pure numpy,
no I/O.

Names
    ``"{collection}/{tensor}"``; the collection is everything before the first ``/``
    (``COLLECTIONS``, smdebug's names): ``weights/encoder.0.weight`` (parameters that are not biases),
    ``biases/encoder.0.bias`` (parameters whose name ends in ``bias``),
    ``gradients/encoder.0.weight`` (the gradient of every parameter that has one, biases included),
    ``activations/encoder.0`` (a module's output; ``activations/encoder.0:output_1`` for the second
    tensor of a tuple output), ``losses/loss`` (the value ``loss_fn`` returned; ``losses/<name>`` for
    a named loss), ``optimizer_variables/encoder.0.weight:update`` (what ``optimizer.step()``
    changed: weight after minus weight before), ``optimizer_variables/group0:lr`` (numel 1) and
    ``labels/loss`` (the target ``loss_fn`` was called with, reduced as float32, with its
    per-class counts: ``TensorTable.class_counts``).
    Train and eval losses are the same name; the ``mode`` column separates them.

Steps
    ``step`` counts per mode (smdebug's mode steps: ``ph.step`` numbers in train, and in the other
    modes one per forward of the watched model); ``global_step`` is the train step that was current
    when the row was recorded (equal to ``step`` in train), so eval rows can be drawn on the train
    axis.

Statistics (``STATS``), float64 columns
    ``min``, ``max``, ``mean``, ``std`` (population, ddof 0), ``l1`` (sum |x|), ``l2`` (sqrt of sum
    x^2) over the tensor's *finite* elements (NaN when it has none); ``nan`` and ``inf`` count the
    non-finite elements; ``zero_frac`` is the fraction of elements exactly 0 (of ``numel``);
    ``numel`` the element count; ``dead_frac`` (activations only, NaN for other tensors) the share of
    units (dimension 1 when the output has two or more, else each element) whose share of values
    > 0 is below ``DEAD_INACTIVITY``. Computed in float32 (also for half/bfloat16 tensors) or float64
    for float64 tensors.

Histogram (``HIST_EDGES``, ``N_BINS`` int64 counts per row)
    Magnitudes of the finite elements (as float32): bin 0 counts exact zeros; bin 1 counts
    ``0 < |x| < HIST_EDGES[0]``; bin ``i + 1`` counts ``HIST_EDGES[i - 1] <= |x| < HIST_EDGES[i]``;
    the last bin counts ``|x| >= HIST_EDGES[-1]``. The edges are the powers of two from 2^-34
    (5.8e-11) to 2^20 (1.05e6), one bin per octave, plus 0.875, 0.9375 and 0.96875 (so a saturated
    tanh/sigmoid shows; SageMaker's 0.97 falls on 0.96875, see ``hist_fraction``). Powers of two
    because the SDK bins by the float's exponent bits (exact and cheap). NaN and Inf are not in the
    histogram: ``counts.sum() + nan + inf == numel``.

Class counts (``labels`` of integer class indices only)
    A record's ``classes`` (beside ``names``; null for every tensor but an integer ``labels/…``)
    holds how many elements equal 0, 1, 2, … (negative values, an ``ignore_index``, are not
    counted). The table keeps them apart from the rows (``ClassCounts``), as few tensors have them
    and their length is the largest class + 1.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# Stored as ``processed/tensors.npz``: the name is ``profilerhub_core.storage.layout.TENSORS``.

STATS = ("min", "max", "mean", "std", "l1", "l2", "nan", "inf", "zero_frac", "numel", "dead_frac")
DEAD_INACTIVITY = 0.01
"""A unit is dead (``dead_frac``) when at most this share of its values is > 0 (SageMaker's
DeadRelu ``threshold_inactivity`` default, 1 %), fixed at capture."""
COLLECTIONS = ("weights", "biases", "gradients", "activations", "losses", "optimizer_variables", "labels")
MODES = ("train", "eval", "predict")

HIST_EDGES = np.unique(np.concatenate([2.0 ** np.arange(-34, 21), [0.875, 0.9375, 0.96875]]))
"""Bin edges on |x| (ascending; see the module docstring for which bin counts what)."""
N_BINS = len(HIST_EDGES) + 2
ZERO_BIN = 0


def collection_of(name: str) -> str:
    """The collection of a tensor name (what comes before the first ``/``)."""
    return name.split("/", 1)[0]


def reduce_array(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(stats, hist)`` of one tensor, computed with numpy: the reference the SDK's torch
    reduction (``profilerhub._watch``) must agree with, and what tests compare against."""
    x = np.asarray(values)
    x = x.astype(np.float64 if x.dtype == np.float64 else np.float32).reshape(-1)
    finite = np.isfinite(x)
    f = x[finite]
    n = x.size
    nan = int(np.isnan(x).sum())
    inf = int(n - finite.sum() - nan)
    zeros = int((f == 0).sum())
    if f.size:
        f64 = f.astype(np.float64)
        l2 = math.sqrt(float((f64 * f64).sum()))
        stats = [f64.min(), f64.max(), f64.mean(), f64.std(), np.abs(f64).sum(), l2]
    else:
        stats = [math.nan] * 6
    stats += [nan, inf, zeros / n if n else math.nan, n, math.nan]
    return np.array(stats, np.float64), hist_counts(np.clip(f, -3.0e38, 3.0e38).astype(np.float32))


def dead_fraction(values: np.ndarray) -> float:
    """``dead_frac`` of one activation (see the module docstring)."""
    x = np.asarray(values)
    if x.size == 0:
        return math.nan
    active = x > 0
    if x.ndim >= 2:
        share = np.moveaxis(active, 1, 0).reshape(x.shape[1], -1).mean(axis=1)
    else:
        share = active.reshape(-1).astype(np.float64)
    return float((share < DEAD_INACTIVITY).mean())


def hist_counts(finite: np.ndarray) -> np.ndarray:
    """The ``N_BINS`` counts of finite values (see the module docstring)."""
    a = np.abs(np.asarray(finite, np.float64).reshape(-1))
    nz = a[a != 0]
    counts = np.zeros(N_BINS, np.int64)
    counts[ZERO_BIN] = a.size - nz.size
    idx = np.searchsorted(HIST_EDGES, nz, side="right") + 1
    counts += np.bincount(idx, minlength=N_BINS)[:N_BINS]
    return counts


def nearest_edge(value: float) -> float:
    """The histogram edge nearest to ``value`` (0 and inf are edges too)."""
    if value <= 0 or math.isinf(value):
        return max(0.0, value)
    return float(HIST_EDGES[np.argmin(np.abs(np.log2(HIST_EDGES) - math.log2(value)))])


def hist_fraction(counts: np.ndarray, low: float, high: float = math.inf) -> np.ndarray:
    """Fraction (per row of ``counts``) of the finite values whose magnitude lies in
    ``[low, high)``, each bound moved to the nearest edge (``nearest_edge``: SageMaker's 0.97
    threshold reads as 0.96875, 0.03 as 2^-5 = 0.03125). NaN for a row without finite values."""
    c = np.atleast_2d(np.asarray(counts, np.float64))
    low, high = nearest_edge(low), nearest_edge(high)
    lower = np.concatenate([[0.0, 0.0], HIST_EDGES])  # bin i holds |x| in [lower[i], upper[i])
    upper = np.concatenate([[0.0], HIST_EDGES, [math.inf]])
    pick = (lower >= low) & (upper <= high)
    pick[ZERO_BIN] = low == 0
    total = c.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = c[:, pick].sum(axis=1) / total
    return out


_INT = np.int64
_ROW_FIELDS = ("name_i", "mode_i", "rank", "step", "global_step", "ts_ns")
_KEY = ("name_i", "mode_i", "rank", "step")


@dataclass(frozen=True)
class ClassCounts:
    """Per-class counts of the label tensors: ``key`` is ``(n, 4)`` int64 (``name_i``, ``mode_i``,
    ``rank``, ``step``, as the table's rows), ``counts`` ``(n, classes)`` int64, zero-padded to the
    largest class any row saw. One entry per key (a later one replaces an earlier)."""

    key: np.ndarray
    counts: np.ndarray

    @classmethod
    def empty(cls) -> ClassCounts:
        return cls(np.zeros((0, 4), _INT), np.zeros((0, 0), _INT))

    @classmethod
    def of(cls, keys: list[tuple[int, ...]], rows: list[Sequence[int]]) -> ClassCounts:
        width = max((len(r) for r in rows), default=0)
        counts = np.zeros((len(rows), width), _INT)
        for i, r in enumerate(rows):
            counts[i, : len(r)] = r
        return cls(np.array(keys, _INT).reshape(-1, 4), counts)._last()

    def merge(self, other: ClassCounts, remap: np.ndarray) -> ClassCounts:
        """Both; ``other``'s name indices mapped through ``remap``; ``other`` wins on a key."""
        if not len(other.key):
            return self
        width = max(self.counts.shape[1], other.counts.shape[1])
        pad = [np.pad(c.counts, ((0, 0), (0, width - c.counts.shape[1]))) for c in (self, other)]
        theirs = other.key.copy()
        theirs[:, 0] = remap[theirs[:, 0]]
        return ClassCounts(np.concatenate([self.key, theirs]), np.concatenate(pad))._last()

    def _last(self) -> ClassCounts:
        n = len(self.key)
        if n < 2:
            return self
        order = np.lexsort((np.arange(n), *self.key.T[::-1]))
        k = self.key[order]
        last = np.ones(n, bool)
        last[:-1] = np.any(k[1:] != k[:-1], axis=1)
        return ClassCounts(k[last], self.counts[order][last])

    def of_tensor(self, name_i: int, mode_i: int, rank: int) -> tuple[np.ndarray, np.ndarray]:
        mask = (self.key[:, 0] == name_i) & (self.key[:, 1] == mode_i) & (self.key[:, 2] == rank)
        return self.key[mask, 3], self.counts[mask]


@dataclass
class TensorTable:
    """One job's reductions, a row per (name, mode, rank, step), sorted in that order.

    ``name_list`` (and ``shape_list``, the last shape seen, a tuple per name, and ``type_list``,
    the module class of an activation or None) are indexed by
    ``name_i``; ``mode_i`` indexes ``MODES``; ``rank``, ``step``, ``global_step`` and ``ts_ns``
    (epoch ns when the SDK reduced the step) are int64 columns; ``stats[s]`` is the float64 column
    of statistic ``s``; ``counts`` is the ``(rows, N_BINS)`` int64 histogram column.
    Build one with ``from_records`` (the SDK's records) or ``unpack``
    (the stored form); ``merge`` adds more rows (a later row replaces one with the same key)."""

    name_list: list[str]
    shape_list: list[tuple[int, ...]]
    type_list: list[str | None]
    name_i: np.ndarray
    mode_i: np.ndarray
    rank: np.ndarray
    step: np.ndarray
    global_step: np.ndarray
    ts_ns: np.ndarray
    stats: dict[str, np.ndarray]
    counts: np.ndarray
    classes: ClassCounts = ClassCounts.empty()

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def empty(cls) -> TensorTable:
        z = np.zeros(0, _INT)
        return cls([], [], [], z, z, z, z, z, z, {s: np.zeros(0) for s in STATS}, np.zeros((0, N_BINS), _INT))

    @classmethod
    def _of(
        cls,
        name_list: list[str],
        shape_list: list[tuple[int, ...]],
        cols: Mapping[str, np.ndarray],
        stats: dict[str, np.ndarray],
        counts: np.ndarray,
        type_list: list[str | None] | None = None,
        classes: ClassCounts | None = None,
    ) -> TensorTable:
        return cls(
            name_list,
            shape_list,
            type_list if type_list is not None else [None] * len(name_list),
            name_i=cols["name_i"],
            mode_i=cols["mode_i"],
            rank=cols["rank"],
            step=cols["step"],
            global_step=cols["global_step"],
            ts_ns=cols["ts_ns"],
            stats=stats,
            counts=counts,
            classes=classes if classes is not None else ClassCounts.empty(),
        )

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> TensorTable:
        """The table of the SDK's decoded ``tensors/*.jsonl.gz`` lines (``record`` makes one)."""
        names: dict[str, int] = {}
        shapes: dict[int, tuple[int, ...]] = {}
        types: dict[int, str | None] = {}
        cols: dict[str, list[int]] = {f: [] for f in _ROW_FIELDS}
        stat_rows: list[list[float]] = []
        hist_rows: list[Sequence[int]] = []
        class_keys: list[tuple[int, ...]] = []
        class_rows: list[Sequence[int]] = []
        for rec in records:
            if rec.get("kind", "reductions") != "reductions":
                continue  # a full tensor's manifest line (``full_tensors``), read by the trial
            mode = MODES.index(rec.get("mode", "train"))
            head = (mode, int(rec.get("rank", 0)), int(rec["step"]), int(rec.get("global_step", rec["step"])))
            ts = int(rec.get("ts_ns", 0))
            kinds = rec.get("types") or [None] * len(rec["names"])
            classes = rec.get("classes") or [None] * len(rec["names"])
            for j, name in enumerate(rec["names"]):
                i = names.setdefault(name, len(names))
                shapes[i] = tuple(rec["shapes"][j])
                types[i] = kinds[j] or types.get(i)
                for f, v in zip(_ROW_FIELDS, (i, *head, ts), strict=True):
                    cols[f].append(v)
                row = [_decode(v) for v in rec["stats"][j]]
                stat_rows.append(row + [math.nan] * (len(STATS) - len(row)))  # older records: fewer
                hist_rows.append(rec["hist"][j])
                if classes[j] is not None:
                    class_keys.append((i, *head[:3]))
                    class_rows.append([int(c) for c in classes[j]])
        if not stat_rows:
            return cls.empty()
        stats = np.array(stat_rows, np.float64).reshape(-1, len(STATS))
        table = cls._of(
            list(names),
            [shapes[i] for i in range(len(names))],
            {f: np.array(cols[f], _INT) for f in _ROW_FIELDS},
            {s: stats[:, k].copy() for k, s in enumerate(STATS)},
            np.array(hist_rows, _INT).reshape(-1, N_BINS),
            [types.get(i) for i in range(len(names))],
            ClassCounts.of(class_keys, class_rows),
        )
        return table._sorted()

    def merge(self, other: TensorTable) -> TensorTable:
        """Both tables' rows; where both have a (name, mode, rank, step), ``other``'s wins."""
        names = list(self.name_list)
        index = {n: i for i, n in enumerate(names)}
        shapes = list(self.shape_list)
        types = list(self.type_list)
        remap = np.zeros(len(other.name_list), _INT)
        for j, n in enumerate(other.name_list):
            if n not in index:
                index[n] = len(names)
                names.append(n)
                shapes.append(other.shape_list[j])
                types.append(other.type_list[j])
            else:
                shapes[index[n]] = other.shape_list[j]
                types[index[n]] = other.type_list[j] or types[index[n]]
            remap[j] = index[n]
        cols = {f: np.concatenate([getattr(self, f), getattr(other, f)]) for f in _ROW_FIELDS[1:]}
        cat = TensorTable._of(
            names,
            shapes,
            {"name_i": np.concatenate([self.name_i, remap[other.name_i]]), **cols},
            {s: np.concatenate([self.stats[s], other.stats[s]]) for s in STATS},
            np.concatenate([self.counts, other.counts]),
            types,
            self.classes.merge(other.classes, remap),
        )
        return cat._sorted()

    def _sorted(self) -> TensorTable:
        """Rows by (name, mode, rank, step), the last one kept of rows sharing that key."""
        n = len(self.step)
        seq = np.arange(n)
        order = np.lexsort((seq, self.step, self.rank, self.mode_i, self.name_i))
        keys = np.stack([self.name_i, self.mode_i, self.rank, self.step])[:, order]
        last = np.ones(n, bool)
        if n > 1:
            last[:-1] = np.any(keys[:, 1:] != keys[:, :-1], axis=0)
        rows = order[last]
        return self._take(rows)

    def _take(self, rows: np.ndarray) -> TensorTable:
        return TensorTable._of(
            self.name_list,
            self.shape_list,
            {f: getattr(self, f)[rows] for f in _ROW_FIELDS},
            {s: v[rows] for s, v in self.stats.items()},
            self.counts[rows],
            self.type_list,
            self.classes,  # keyed by its own columns: read through ``class_counts``
        )

    # -- reading ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.step)

    def names(self, collection: str | None = None, regex: str | None = None) -> list[str]:
        """Sorted names (of one collection; matching ``regex`` anywhere, as ``re.search``)."""
        pattern = re.compile(regex) if regex else None
        present = set(np.unique(self.name_i).tolist())
        return sorted(
            n
            for i, n in enumerate(self.name_list)
            if i in present
            and (collection is None or collection_of(n) == collection)
            and (pattern is None or pattern.search(n))
        )

    tensor_names = names

    def collections(self) -> list[str]:
        return sorted({collection_of(n) for n in self.tensor_names()})

    def modes(self) -> list[str]:
        return [MODES[i] for i in np.unique(self.mode_i).tolist()]

    def ranks(self) -> list[int]:
        return [int(r) for r in np.unique(self.rank)]

    def steps(self, mode: str | None = None, name: str | None = None, rank: int | None = None) -> list[int]:
        """Sorted distinct steps (of one mode, one tensor, one rank)."""
        mask = self._mask(name, mode, rank)
        return [int(s) for s in np.unique(self.step[mask])]

    def shape(self, name: str) -> tuple[int, ...]:
        return self.shape_list[self._index(name)]

    def module_type(self, name: str) -> str | None:
        """The class of the module an activation came from (``"ReLU"``), None for other tensors."""
        return self.type_list[self._index(name)]

    def series(
        self, name: str, stat: str, mode: str = "train", rank: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, values)`` of one statistic of one tensor, by step. ``KeyError`` for an
        unknown name or statistic; empty arrays when the tensor has no rows in that mode/rank."""
        if stat not in STATS:
            raise KeyError(f"unknown statistic {stat!r}; one of {', '.join(STATS)}")
        mask = self._mask(name, mode, rank)
        return self.step[mask], self.stats[stat][mask]

    def hist(self, name: str, mode: str = "train", rank: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, counts)`` of one tensor's histogram: counts is ``(len(steps), N_BINS)``."""
        mask = self._mask(name, mode, rank)
        return self.step[mask], self.counts[mask]

    def class_counts(self, name: str, mode: str = "train", rank: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, counts)`` of a label tensor's per-class counts: counts is ``(len(steps),
        classes)``. ``KeyError`` for an unknown name, or one without class counts."""
        i = self._index(name)
        if mode not in MODES:
            raise KeyError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
        steps, counts = self.classes.of_tensor(i, MODES.index(mode), rank)
        if not len(steps):
            raise KeyError(f"{name!r} has no class counts in {mode} on rank {rank}")
        return steps, counts

    def wall_times(self, name: str, mode: str = "train", rank: int = 0) -> np.ndarray:
        """The ``ts_ns`` of each row ``series(name, …, mode, rank)`` returns."""
        return self.ts_ns[self._mask(name, mode, rank)]

    def matrix(
        self, names: Sequence[str], stat: str, mode: str = "train", rank: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, values)`` for a heat map: the union of the tensors' steps, and a
        ``(len(names), len(steps))`` float64 array (NaN where a tensor has no row at a step)."""
        parts = [self.series(n, stat, mode, rank) for n in names]
        steps = np.unique(np.concatenate([p[0] for p in parts])) if parts else np.zeros(0, _INT)
        out = np.full((len(names), len(steps)), np.nan)
        for i, (s, v) in enumerate(parts):
            out[i, np.searchsorted(steps, s)] = v
        return steps, out

    def index(self) -> dict[str, Any]:
        """What the listing APIs answer: names with collection and shape, the collections, modes,
        ranks, and per mode the sorted steps."""
        return {
            "tensors": [
                {
                    "name": n,
                    "collection": collection_of(n),
                    "shape": list(self.shape(n)),
                    "module_type": self.module_type(n),
                }
                for n in self.names()
            ],
            "collections": self.collections(),
            "modes": self.modes(),
            "ranks": self.ranks(),
            "steps": {m: self.steps(m) for m in self.modes()},
            "stats": list(STATS),
            "hist_edges": HIST_EDGES.tolist(),
        }

    def global_steps(self, name: str, mode: str = "train", rank: int = 0) -> np.ndarray:
        """The ``global_step`` of each row ``series(name, …, mode, rank)`` returns."""
        return self.global_step[self._mask(name, mode, rank)]

    def rows(self, name: str, mode: str = "train", rank: int = 0) -> TensorTable:
        """The sub-table of one tensor in one mode and rank."""
        return self._take(np.flatnonzero(self._mask(name, mode, rank)))

    def _index(self, name: str) -> int:
        try:
            return self.name_list.index(name)
        except ValueError:
            raise KeyError(f"no tensor {name!r}") from None

    def _mask(self, name: str | None, mode: str | None, rank: int | None) -> np.ndarray:
        mask = np.ones(len(self.step), bool)
        if name is not None:
            mask &= self.name_i == self._index(name)
        if mode is not None:
            if mode not in MODES:
                raise KeyError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
            mask &= self.mode_i == MODES.index(mode)
        if rank is not None:
            mask &= self.rank == rank
        return mask

    # -- stored form ------------------------------------------------------------------------
    def pack(self) -> bytes:
        """The ``.npz`` (no pickle) that ``unpack`` reads."""
        arrays: dict[str, np.ndarray] = {
            "names": np.array(self.name_list, dtype=np.str_),
            "shapes": np.array([json.dumps(list(s)) for s in self.shape_list], dtype=np.str_),
            "types": np.array([t or "" for t in self.type_list], dtype=np.str_),
            "hist": self.counts,
            "hist_edges": HIST_EDGES,
        }
        arrays |= {f: getattr(self, f) for f in _ROW_FIELDS}
        arrays |= {f"stat.{s}": v for s, v in self.stats.items()}
        if len(self.classes.key):
            arrays |= {"classes.key": self.classes.key, "classes.counts": self.classes.counts}
        buf = io.BytesIO()
        np.savez(buf, **arrays)  # type: ignore[arg-type]
        return buf.getvalue()

    @classmethod
    def unpack(cls, data: bytes) -> TensorTable:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            names = [str(n) for n in z["names"].tolist()]
            types = [str(t) or None for t in z["types"].tolist()] if "types" in z else None
            stats = {
                s: z[f"stat.{s}"] if f"stat.{s}" in z else np.full(len(z["step"]), np.nan) for s in STATS
            }
            return cls._of(
                names,
                [tuple(json.loads(str(s))) for s in z["shapes"].tolist()],
                {f: z[f] for f in _ROW_FIELDS},
                stats,
                z["hist"],
                types,
                ClassCounts(z["classes.key"], z["classes.counts"]) if "classes.key" in z else None,
            )


def _decode(v: Any) -> float:
    if v is None:
        return math.nan
    if isinstance(v, str):
        return float(v)  # "inf", "-inf", "nan"
    return float(v)


__all__ = [
    "COLLECTIONS",
    "HIST_EDGES",
    "MODES",
    "N_BINS",
    "STATS",
    "DEAD_INACTIVITY",
    "ZERO_BIN",
    "ClassCounts",
    "TensorTable",
    "collection_of",
    "dead_fraction",
    "hist_counts",
    "hist_fraction",
    "nearest_edge",
    "reduce_array",
]
