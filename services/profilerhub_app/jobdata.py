"""What the analysis routes read of a Ready job: its summary, a trace's panels and timeline.

Everything here was computed at ingest (``profilerhub_worker.ingest.views``); the app only reads
it, through :func:`profilerhub_app.routes.jobs.owned_job` so a job the hub does not list is never
read. Parsed summaries and open timelines are kept in small LRU caches: a summary per job
version, a timeline per (job, trace) mapped from a local copy of its files (``cache_dir``), so
reopening costs a few file opens and two jobs open share nothing but the page cache.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request

from profilerhub_analysis.timeline.bundle import TraceTimeline
from profilerhub_app.routes.jobs import OwnedJob, owned_job
from profilerhub_core.errors import InvalidInput, NotFound
from profilerhub_core.storage.layout import SUMMARY

TIMELINE_DONE = "done"
SUMMARY_CACHE = 16
#: How long the hub's word that a job is the owner's and Ready is reused (a timeline pan asks
#: several windows a second; each need not ask the hub again).
READY_SECONDS = 2.0


class BadParameter(InvalidInput):
    """A query parameter that is missing or out of range (answered 400)."""


def int_param(request: Request, name: str, default: int | None, lo: int, hi: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        if default is None:
            raise BadParameter(f"'{name}' is required")
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadParameter(f"'{name}' must be an integer, not {raw[:40]!r}") from None
    if not lo <= value <= hi:
        raise BadParameter(f"'{name}' must be between {lo} and {hi}")
    return value


def id_list(request: Request, name: str, limit: int = 4096) -> list[int] | None:
    """Comma-separated ids; None when the parameter is absent (all), [] when empty (none)."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    parts = [p for p in raw.split(",") if p.strip()]
    if len(parts) > limit:
        raise BadParameter(f"'{name}' lists more than {limit} ids")
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise BadParameter(f"'{name}' must be comma-separated integers") from None


class _Lru(OrderedDict[Any, Any]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = max(1, size)
        self.lock = threading.Lock()

    def fetch(self, key: Any, make: Callable[[], Any]) -> Any:
        """The cached value of ``key``, made (outside the lock) and kept when missing."""
        with self.lock:
            if key in self:
                self.move_to_end(key)
                return self[key]
        value = make()
        with self.lock:
            self[key] = value
            self.move_to_end(key)
            while len(self) > self.size:
                self.popitem(last=False)
        return value


class JobData:
    """Readers of Ready jobs for one app (kept on ``app.state``)."""

    def __init__(self, cache_dir: str, open_timelines: int) -> None:
        self.cache_dir = (
            Path(cache_dir) if cache_dir else Path(tempfile.gettempdir()) / "profilerhub-app-cache"
        )
        self._summaries = _Lru(SUMMARY_CACHE)
        self._timelines = _Lru(open_timelines)
        self._fetching = threading.Lock()
        self._ready: dict[str, tuple[float, OwnedJob]] = {}

    def ready_job(self, request: Request, job_id: str) -> OwnedJob:
        """The owner's Ready job ``job_id`` (``NotFound`` otherwise), as the hub said at most
        ``READY_SECONDS`` ago."""
        now = time.monotonic()
        seen = self._ready.get(job_id)
        if seen is not None and now - seen[0] < READY_SECONDS:
            return seen[1]
        job = owned_job(request, job_id)
        if job.record.get("status") != "Ready":
            raise NotFound(f"Job '{job_id}' is not Ready yet (status {job.record.get('status')})")
        if len(self._ready) > 1000:
            self._ready.clear()
        self._ready[job_id] = (now, job)
        return job

    def summary(self, job: OwnedJob) -> dict[str, Any]:
        version = (job.job_id, job.record.get("updated_at"), job.record.get("status"))
        return self._summaries.fetch(
            version, lambda: json.loads(job.store.get(job.key(f"processed/{SUMMARY}")))
        )

    def trace(self, job: OwnedJob, index: int) -> dict[str, Any]:
        traces = self.summary(job).get("traces", [])
        if not 0 <= index < len(traces):
            raise NotFound(f"Job '{job.job_id}' has no trace {index} ({len(traces)} traces)")
        return traces[index]

    def panels(self, job: OwnedJob, index: int) -> dict[str, Any]:
        entry = self.trace(job, index)
        key = entry.get("dashboard")
        if not key:
            return {}
        version = (job.job_id, job.record.get("updated_at"), "panels", index)
        return self._summaries.fetch(version, lambda: json.loads(job.store.get(job.key(key))))

    def timeline(self, job: OwnedJob, index: int) -> TraceTimeline:
        entry = self.trace(job, index)
        prefix = entry.get("timeline")
        if not prefix:
            raise NotFound(f"Job '{job.job_id}' was ingested without a timeline; re-ingest it")
        version = (job.job_id, str(job.record.get("updated_at")), index)
        return self._timelines.fetch(
            version, lambda: TraceTimeline.open(self._local_copy(job, prefix, version))
        )

    def _local_copy(self, job: OwnedJob, prefix: str, version: tuple[str, str, int]) -> Path:
        folder = self.cache_dir / _safe(version[0])
        safe = _safe(f"{version[1]}-{version[2]}")
        target = folder / safe
        if (target / TIMELINE_DONE).exists():
            return target
        with self._fetching:
            if (target / TIMELINE_DONE).exists():
                return target
            infos = list(job.store.list(job.key(prefix.rstrip("/")) + "/"))
            if not any(i.key.endswith("/" + TIMELINE_DONE) for i in infos):
                raise NotFound(f"Job '{job.job_id}' has no complete timeline")
            folder.mkdir(parents=True, exist_ok=True)
            partial = Path(tempfile.mkdtemp(prefix=safe + ".", dir=folder))
            try:
                for info in infos:
                    name = info.key.rsplit("/", 1)[1]
                    with (partial / name).open("wb") as fh:
                        for chunk in job.store.stream(info.key):
                            fh.write(chunk)
                shutil.rmtree(target, ignore_errors=True)
                partial.rename(target)
                for other in folder.glob(f"*-{version[2]}"):  # earlier versions (a re-ingested job)
                    if other != target and other.is_dir():
                        shutil.rmtree(other, ignore_errors=True)
            except BaseException:
                shutil.rmtree(partial, ignore_errors=True)
                raise
        return target


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


__all__ = ["BadParameter", "JobData", "id_list", "int_param"]
