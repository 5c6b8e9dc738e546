"""A watched step's record, built off the training thread.

At a step's end ``Watcher.flush`` moves what the step collected to the host (one copy per device;
on the CPU the values are read in place) into a ``StepValues``: plain floats, lists and host
tensors the SDK made itself, never a view of the training's tensors. The run's ``tensors``
buffer takes it as it is; the collector thread calls it when it cuts the next chunk
(``Run._drain``), which builds the record: the per-name lists, the rows' statistics as JSON
values, the class counts of the labels. So an unsaved step (its loss and labels only) costs the
training thread a few attribute reads and an append, not a record's dozen lists.

A step with a NaN or an Inf is built at once, on the training thread, so the SDK-side
``ExplodingTensor`` (``Run.on_tensor_record``) stops an opted-in run at its next ``ph.step``.

From a GPU the copies to the host are started, not waited for (``HostCopy``): the ``StepValues``
is ``pending`` until they land, and ``settle`` (the collector's thread, when it builds the
record, or a later step's flush, which looks for a NaN) reads them.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._reduce import N_BINS, counts_row, scalar_row
from ._watch_host import _stats

NAN, INF = 6, 7  # the NaN and Inf counts' columns of a row (``_reduce.STATS``)
_SETTLE = threading.Lock()


@dataclass(slots=True)
class StepValues:
    """One (mode, step)'s values on the host; calling it returns the step's record."""

    mode: str
    step: int
    global_step: int
    rank: int
    ts_ns: int
    rows: list[tuple[list[tuple[str, list[int]]], Any, Any]] = field(default_factory=list)
    """Per device: the (name, shape) of each row, their statistics (a host float64 ``(k, 10)``
    tensor) and their histograms (a host int64 ``(k, N_BINS)`` tensor)."""
    scalars: list[tuple[str, float]] = field(default_factory=list)
    dead: dict[str, float] = field(default_factory=dict)
    classes: dict[str, list[int]] = field(default_factory=dict)
    """Labels' counts per class (``counts[k]``: values equal to ``k``)."""
    label_values: dict[str, list[int]] = field(default_factory=dict)
    """Labels read as they are (a small batch on the CPU), counted when the record is built."""
    label_shapes: dict[str, list[int]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    pending: Callable[[], None] | None = None
    """Reads the values from the host copies once they have landed (a GPU's step); None: read."""
    copy: Any = None  # the ``HostCopy`` a pending step waits for

    def settle(self) -> None:
        """The deferred copies waited for and read, once, by whichever thread asks first."""
        if self.pending is not None:
            with _SETTLE:
                if self.pending is not None:
                    self.pending()
                    self.pending = None

    def landed(self) -> bool:
        """Whether reading the values would not wait (the copies are done, or there were none)."""
        return self.pending is None or self.copy.done()

    def nonfinite(self) -> bool:
        """Whether a value of the step is NaN or Inf (what the SDK-side ExplodingTensor reads)."""
        self.settle()
        if any(not math.isfinite(v) for _, v in self.scalars):
            return True
        return any(bool(stats[:, NAN : INF + 1].any()) for _, stats, _ in self.rows)

    def __call__(self) -> dict[str, Any]:
        self.settle()
        latest: dict[str, tuple[list[int], list[float], list[int]]] = {}  # shape, statistics, hist
        for names, stats_t, hists_t in self.rows:
            for (name, shape), stat, hist in zip(names, stats_t.tolist(), hists_t.tolist(), strict=True):
                latest[name] = (shape, stat, hist)
        for name, value in self.scalars:
            row = scalar_row(value)
            latest[name] = ([], row[:10], list(map(int, row[10 : 10 + N_BINS])))
        class_of = dict(self.classes)
        class_of |= {n: count_classes(v) for n, v in self.label_values.items()}
        for name, counts in class_of.items():
            row = counts_row(counts)
            shape = self.label_shapes.get(name, [sum(counts)])
            latest[name] = (shape, row[:10], list(map(int, row[10 : 10 + N_BINS])))
        record: dict[str, Any] = {
            "mode": self.mode,
            "step": self.step,
            "global_step": self.global_step,
            "rank": self.rank,
            "ts_ns": self.ts_ns,
            "names": list(latest),
            "shapes": [s for s, _, _ in latest.values()],
            "stats": [_stats(stat, self.dead.get(n, math.nan)) for n, (_, stat, _) in latest.items()],
            "hist": [hist for _, _, hist in latest.values()],
            "types": [self.types.get(n) for n in latest],
        }
        if class_of:
            record["classes"] = [class_of.get(n) for n in latest]
        return record


def count_classes(values: list[int]) -> list[int]:
    """Each class's count among integer labels, ``ignore_index``'s negative values left out."""
    seen: dict[int, int] = {}
    for v in values:
        if v >= 0:
            seen[v] = seen.get(v, 0) + 1
    return [seen.get(k, 0) for k in range(max(seen) + 1)] if seen else []
