"""A job's ``ph.watch`` reductions for the Model page: one ``TensorTable`` per job, and the views
the page draws cut from it by the analysis engine (``profilerhub_analysis.tensors``).

A Ready job's table is ``processed/tensors.npz`` (written at ingest), cached per job version. A
job still running has only the SDK's ``raw/tensors/*.jsonl.gz`` chunks: each is decoded once
(chunks never change once written) and merged into the job's table, so a poll every few seconds
reads only the chunks that are new. Every number the page shows is computed here (the heat map's
matrix, the total gradient norm, the histograms); the browser draws.
"""

from __future__ import annotations

import contextlib
import json
import threading
import zlib
from collections import OrderedDict
from typing import Any

import numpy as np

from profilerhub_analysis.tensors import HIST_EDGES, MODES, STATS, TensorTable
from profilerhub_app.owned import OwnedJob
from profilerhub_core.errors import InvalidInput, NotFound
from profilerhub_core.storage.layout import TENSORS

MAX_CHUNK_BYTES = 64 << 20
"""A chunk larger than this once decompressed is skipped."""
MAX_COLUMNS = 1000
"""Steps a heat map or series answers at most (evenly picked, the last one kept)."""
CACHE_JOBS = 8


def _plain(values: np.ndarray) -> list[float | None]:
    """Floats for JSON, NaN and ±inf as null."""
    return [
        None if not np.isfinite(v) else float(f"{v:.6g}") for v in np.asarray(values, np.float64).tolist()
    ]


def _pick(n: int, limit: int = MAX_COLUMNS) -> np.ndarray:
    """At most ``limit`` evenly spread indices of ``range(n)``, the first and last included."""
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))


class TensorData:
    """The owner's jobs' tables (one reader per app, in its ``AppServices``)."""

    def __init__(self) -> None:
        self._ready: OrderedDict[tuple[str, Any], TensorTable] = OrderedDict()
        self._live: OrderedDict[str, tuple[frozenset[tuple[str, int]], TensorTable]] = OrderedDict()
        self._lock = threading.Lock()

    # -- the table ------------------------------------------------------------------------------
    def table(self, job: OwnedJob) -> TensorTable:
        """The job's table: ingest's for a Ready job, what has streamed for a running one; an
        empty table when it recorded no tensors."""
        if job.ready:
            version = (job.job_id, job.record.get("updated_at"))
            with self._lock:
                hit = self._ready.get(version)
            if hit is not None:
                return hit
            try:
                table = TensorTable.unpack(job.store.get(job.processed(TENSORS)))
            except NotFound:
                table = TensorTable.empty()
            with self._lock:
                self._ready[version] = table
                while len(self._ready) > CACHE_JOBS:
                    self._ready.popitem(last=False)
            return table
        return self._streamed(job)

    def _streamed(self, job: OwnedJob) -> TensorTable:
        raw = job.key("raw") + "/tensors/"
        chunks = sorted(
            (info.key, info.size) for info in job.store.list(raw) if info.key.endswith(".jsonl.gz")
        )
        with self._lock:
            seen, table = self._live.get(job.job_id, (frozenset(), TensorTable.empty()))
        done: set[tuple[str, int]] = set()
        for chunk in (c for c in chunks if c not in seen):
            records = _decode(job, chunk[0])
            if records is None:
                continue  # still being written: read it at the next poll
            done.add(chunk)
            with contextlib.suppress(KeyError, ValueError, TypeError, IndexError):  # not the SDK's format
                table = table.merge(TensorTable.from_records(records))
        with self._lock:
            self._live[job.job_id] = (seen | done, table)
            self._live.move_to_end(job.job_id)
            while len(self._live) > CACHE_JOBS:
                self._live.popitem(last=False)
        return table

    # -- the page's views -----------------------------------------------------------------------
    def index(self, job: OwnedJob) -> dict[str, Any]:
        """Names, collections, modes, ranks, steps per mode, the statistics and histogram edges."""
        table = self.table(job)
        return {"job_id": job.job_id, "final": job.ready, "rows": len(table), **table.index()}

    def matrix(self, job: OwnedJob, collection: str, stat: str, mode: str, rank: int) -> dict[str, Any]:
        """The heat map: one row per tensor of ``collection``, one column per step (at most
        ``MAX_COLUMNS``), and for ``l2`` the total over the rows (the global norm) per step."""
        table = self.table(job)
        _check(stat, mode)
        names = table.names(collection=collection)
        steps, values = table.matrix(names, stat, mode, rank)
        keep = _pick(len(steps))
        out: dict[str, Any] = {
            "collection": collection,
            "stat": stat,
            "mode": mode,
            "rank": rank,
            "names": names,
            "steps": steps[keep].tolist(),
            "values": [_plain(row) for row in values[:, keep]],
        }
        if stat == "l2" and len(names):
            with np.errstate(invalid="ignore"):
                total = np.sqrt(np.nansum(values[:, keep] ** 2, axis=0))
            total[np.all(np.isnan(values[:, keep]), axis=0)] = np.nan
            out["total"] = _plain(total)
        return out

    def series(self, job: OwnedJob, name: str, stat: str, mode: str, rank: int) -> dict[str, Any]:
        """One statistic of one tensor by step, with each row's train step (``global_steps``)."""
        table = self.table(job)
        _check(stat, mode)
        try:
            steps, values = table.series(name, stat, mode, rank)
        except KeyError:
            raise NotFound(f"Job '{job.job_id}' has no tensor {name!r}") from None
        glob = table.global_steps(name, mode, rank)
        keep = _pick(len(steps))
        return {
            "name": name,
            "stat": stat,
            "mode": mode,
            "rank": rank,
            "steps": steps[keep].tolist(),
            "global_steps": glob[keep].tolist(),
            "values": _plain(values[keep]),
        }

    def hist(self, job: OwnedJob, name: str, mode: str, rank: int) -> dict[str, Any]:
        """One tensor's magnitude histogram per step, each row as fractions of its finite values
        (TensorBoard's distribution view over steps); ``edges`` as ``tensors.HIST_EDGES``."""
        table = self.table(job)
        _check("numel", mode)
        try:
            steps, counts = table.hist(name, mode, rank)
        except KeyError:
            raise NotFound(f"Job '{job.job_id}' has no tensor {name!r}") from None
        keep = _pick(len(steps), 400)
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


def _check(stat: str, mode: str) -> None:
    if stat not in STATS:
        raise InvalidInput(f"unknown statistic {stat!r}; one of {', '.join(STATS)}")
    if mode not in MODES:
        raise InvalidInput(f"unknown mode {mode!r}; one of {', '.join(MODES)}")


def _decode(job: OwnedJob, key: str) -> list[dict[str, Any]] | None:
    """The records of one chunk: none when it is unreadable or too large, None while it is still
    being written (truncated)."""
    try:
        inflater = zlib.decompressobj(wbits=31)
        data = inflater.decompress(job.store.get(key), MAX_CHUNK_BYTES + 1)
        if len(data) > MAX_CHUNK_BYTES:
            return []
        if not inflater.eof:
            return None
        return [json.loads(line) for line in data.splitlines() if line.strip()]
    except (zlib.error, ValueError, NotFound):
        return []


__all__ = ["TensorData"]
