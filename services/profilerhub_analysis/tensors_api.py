"""The answers of the tensors API (hub REST and profiler app alike), from a job's ``TensorTable``.

``GET …/jobs/{job_id}/tensors``: ``index`` (names with collection, shape and module type,
collections, modes, ranks, steps per mode, the statistics and histogram edges);
``GET …/jobs/{job_id}/tensors/{name}?stat=l2&mode=train&rank=0``: ``series`` (one statistic over
steps, with each row's global step and wall time; ``hist=true`` adds the histogram over steps).
A running job's table is the chunks so far (``JobTensors``), a Ready job's the one ingest wrote.
``TensorQueryError`` for a bad parameter (a 400), ``KeyError`` for an unknown tensor (a 404).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from profilerhub_analysis.tensor_chunks import ChunkedTable, FullTensor
from profilerhub_analysis.tensors import HIST_EDGES, MODES, STATS, TensorTable

MAX_POINTS = 100_000
"""Rows one series answer may hold (``start``/``end`` page through longer series)."""


class TensorQueryError(ValueError):
    """A parameter of a tensors query that cannot be answered (a 400)."""


def index(table: TensorTable, *, job_id: str, live: bool) -> dict[str, Any]:
    return {"job_id": job_id, "live": live, **table.index()}


def _finite(values: np.ndarray) -> list[float | None]:
    return [None if not math.isfinite(v) else v for v in values.tolist()]


def series(
    table: TensorTable,
    name: str,
    *,
    job_id: str,
    stat: str = "l2",
    mode: str = "train",
    rank: int = 0,
    hist: bool = False,
    start: int | None = None,
    end: int | None = None,
) -> dict[str, Any]:
    """One tensor's statistic over steps (NaN/Inf as null, the counts ``nan``/``inf`` say which)."""
    if stat not in STATS:
        raise TensorQueryError(f"stat must be one of {', '.join(STATS)}, got {stat!r}")
    if mode not in MODES:
        raise TensorQueryError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if name not in table.name_list:
        raise KeyError(f"no tensor {name!r} in job {job_id}")
    rows = table.rows(name, mode, rank)
    keep = np.ones(len(rows), bool)
    if start is not None:
        keep &= rows.step >= start
    if end is not None:
        keep &= rows.step < end
    picked = np.flatnonzero(keep)[:MAX_POINTS]
    out: dict[str, Any] = {
        "job_id": job_id,
        "name": name,
        "collection": name.split("/", 1)[0],
        "shape": list(table.shape(name)),
        "module_type": table.module_type(name),
        "stat": stat,
        "mode": mode,
        "rank": rank,
        "steps": rows.step[picked].tolist(),
        "global_steps": rows.global_step[picked].tolist(),
        "wall_ns": rows.ts_ns[picked].tolist(),
        "values": _finite(rows.stats[stat][picked]),
        "truncated": int(keep.sum()) > len(picked),
    }
    if hist:
        out["hist_edges"] = HIST_EDGES.tolist()
        out["hist"] = rows.counts[picked].tolist()
    return out


def full_items(full: Iterable[FullTensor]) -> list[dict[str, Any]]:
    return [{"name": f.name, "mode": f.mode, "rank": f.rank, "step": f.step, "path": f.path} for f in full]


class JobTensors:
    """Per process: running jobs' tables grown from their chunks (each chunk read once), at most
    ``max_jobs`` kept (least recently asked for dropped)."""

    def __init__(self, max_jobs: int = 32) -> None:
        self._jobs: OrderedDict[str, ChunkedTable] = OrderedDict()
        self._lock = threading.Lock()
        self.max_jobs = max_jobs

    def live(self, job_id: str, names: Iterable[str], read: Callable[[str], bytes]) -> ChunkedTable:
        with self._lock:
            grown = self._jobs.pop(job_id, None) or ChunkedTable()
            self._jobs[job_id] = grown
            while len(self._jobs) > self.max_jobs:
                self._jobs.popitem(last=False)
        grown.update(names, read)
        return grown

    def table(
        self,
        job_id: str,
        *,
        ready: bool,
        processed: Callable[[], bytes | None],
        raw_names: Callable[[], Iterable[str]],
        read_raw: Callable[[str], bytes],
    ) -> tuple[TensorTable, bool]:
        """``(table, live)``: a Ready job's stored table (``processed()``, None: it has none),
        else the chunks streamed so far (names relative to the job's raw folder)."""
        if ready:
            data = processed()
            self.forget(job_id)
            return (TensorTable.unpack(data) if data else TensorTable.empty()), False
        return self.live(job_id, raw_names(), read_raw).table, True

    def full(
        self, job_id: str, raw_names: Callable[[], Iterable[str]], read_raw: Callable[[str], bytes]
    ) -> list[FullTensor]:
        """The tensors saved whole, from the chunks' manifests (Ready or not)."""
        return list(self.live(job_id, raw_names(), read_raw).full)

    def forget(self, job_id: str) -> None:
        with self._lock:
            self._jobs.pop(job_id, None)


__all__ = ["MAX_POINTS", "JobTensors", "TensorQueryError", "full_items", "index", "series"]
