"""What the analysis routes read of a Ready job: its summary, a trace's panels and timeline; and of
a job still running, the same of each on-demand capture ingested so far (``live_captures``).

Everything here was computed at ingest (``profilerhub_worker.ingest.views``); the app only reads
it, for a job :class:`profilerhub_app.owned.OwnedJobs` found the hub lists as the owner's and
Ready, so a job the hub does not list is never read. Parsed summaries and open timelines are kept
in small LRU caches: a summary per job version, a timeline per (job, trace).

How a timeline opens (the first drawn timeline waits for it):

- the first view (the whole trace) is drawn from the overview ingest wrote (the window answer
  at ``OVERVIEW_PX`` columns), so it never waits for the index (``JobTimeline``);
- on a local store, the files are memory-mapped where ingest wrote them: nothing is copied, and
  nothing read at open but small JSON files; pages come in as queries touch them, and every
  process mapping them shares the one page-cache copy;
- on S3, only ``lanes.json`` and the overview are fetched at open; the other files come down in
  the background, in parallel, into ``cache_dir`` (once per job version), the index first: other
  windows wait for the index, the event panel and search for everything.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from profilerhub_analysis.tbviews.calls import operators_between, unpack
from profilerhub_analysis.timeline.binary import select_window
from profilerhub_analysis.timeline.bundle import (
    INDEX_PREFIX,
    LANES_FILE,
    OVERVIEW_FILE,
    OVERVIEW_PX,
    TraceTimeline,
)
from profilerhub_app.owned import OwnedJob
from profilerhub_core.errors import NotFound, Unavailable
from profilerhub_core.storage import ObjectStore
from profilerhub_core.storage.layout import LIVE_CAPTURES, RANKS, SUMMARY, TIMELINE_DONE

SUMMARY_CACHE = 16
#: How long a running job's list of ingested captures is reused before it is read again.
LIVE_SECONDS = 2.0
#: Files of one timeline fetched from S3 at once, and how long a query waits for them.
FETCH_THREADS = 8
FETCH_WAIT_SECONDS = 300.0


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

    def drop(self, key: Any) -> None:
        with self.lock:
            self.pop(key, None)


def live_captures(job: OwnedJob) -> dict[str, Any]:
    """A running job's captures ingested so far (``processed/live/captures.json``) as a summary's
    ``traces``, those ingest could not read left out; ``NotFound`` while there is none."""
    try:
        doc = json.loads(job.store.get(job.processed(LIVE_CAPTURES)))
    except (NotFound, ValueError):
        doc = {}
    traces = [t for t in doc.get("traces") or [] if isinstance(t, dict) and not t.get("error")]
    if not traces:
        raise NotFound(
            f"Job '{job.job_id}' is not Ready yet (status {job.record.get('status')}) and has no "
            "capture ingested: its traces are read when it completes"
        )
    return {"job": {}, "traces": traces, "live": True}


def trace_list(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The job's traces for a picker: ``index``, ``file``, ``rank``."""
    return [
        {"index": i, "file": t.get("file"), "rank": t.get("report", {}).get("rank")}
        for i, t in enumerate(summary.get("traces", []))
    ]


class JobData:
    """Readers of Ready jobs for one app (one of its ``AppServices``)."""

    def __init__(self, cache_dir: str, open_timelines: int) -> None:
        self.cache_dir = (
            Path(cache_dir) if cache_dir else Path(tempfile.gettempdir()) / "profilerhub-app-cache"
        )
        self._summaries = _Lru(SUMMARY_CACHE)
        self._timelines = _Lru(open_timelines)
        self._fetching = threading.Lock()

    def summary(self, job: OwnedJob) -> dict[str, Any]:
        """A Ready job's summary; for a job still running, its captures ingested so far as its
        traces (``{"traces": [...]}``, from ``processed/live/captures.json``: ``NotFound`` while
        there is none), read again every ``LIVE_SECONDS``."""
        if not job.ready:
            live = (job.job_id, "live", int(time.monotonic() / LIVE_SECONDS))
            return self._summaries.fetch(live, lambda: live_captures(job))
        version = (job.job_id, job.record.get("updated_at"), job.record.get("status"))
        return self._summaries.fetch(
            version, lambda: json.loads(job.store.get(job.processed(SUMMARY)))
        )

    def ranks(self, job: OwnedJob) -> bytes | None:
        """A Ready job's ``processed/ranks.json`` as stored (the ranks table and the all-ranks
        overview, written at the join: served as it is, never parsed), or None for a job ingested
        before it existed or still running."""
        if not job.ready:
            return None
        version = (job.job_id, job.record.get("updated_at"), "ranks")

        def read() -> bytes | None:
            try:
                return job.store.get(job.processed(RANKS))
            except NotFound:
                return None

        found: bytes | None = self._summaries.fetch(version, read)
        return found

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

    def tb_views(self, job: OwnedJob, index: int) -> dict[str, Any]:
        """The TensorBoard plugin's views of trace ``index``, as ingest stored them."""
        entry = self.trace(job, index)
        key = entry.get("tb_views")
        if not key:
            why = entry.get("tb_views_error")
            raise NotFound(
                f"Trace {index} of job '{job.job_id}' has no operator, kernel or memory views: "
                + (f"ingest could not compute them ({why})" if why else "it was ingested before they existed")
                + "; ingest the job again (POST …/jobs/{id}/complete on the hub) to compute them"
            )
        version = (job.job_id, job.record.get("updated_at"), "tb_views", index)
        return self._summaries.fetch(version, lambda: json.loads(job.store.get(job.key(key))))

    def tb_operators_between(
        self, job: OwnedJob, index: int, t0: float | None, t1: float | None
    ) -> dict[str, Any]:
        """The Operators view over the calls of trace ``index`` that start in ``[t0, t1)`` µs."""
        entry = self.trace(job, index)
        key = entry.get("tb_calls")
        if not key:
            raise NotFound(
                f"Trace {index} of job '{job.job_id}' has no operator calls to take over a time range: "
                "it was ingested before they were kept (or its views could not be computed); ingest the "
                "job again (POST …/jobs/{id}/complete on the hub) to keep them"
            )
        version = (job.job_id, job.record.get("updated_at"), "tb_calls", index)
        calls = self._summaries.fetch(version, lambda: unpack(job.store.get(job.key(key))))
        by_name, by_shape, n = operators_between(calls, t0, t1)
        return {"t0us": t0, "t1us": t1, "calls": n, "tb_operators": by_name,
                "tb_operators_by_shape": by_shape}  # fmt: skip

    def timeline(self, job: OwnedJob, index: int) -> JobTimeline:
        entry = self.trace(job, index)
        prefix = entry.get("timeline")
        if not prefix:
            raise NotFound(f"Job '{job.job_id}' was ingested without a timeline; re-ingest it")
        version = (job.job_id, str(job.record.get("updated_at")), index)
        opened = self._timelines.fetch(version, lambda: self._open(job, prefix, version))
        if opened.failed:
            self._timelines.drop(version)  # the next request tries the download again
        return opened

    def _open(self, job: OwnedJob, prefix: str, version: tuple[str, str, int]) -> JobTimeline:
        folder = job.key(prefix.rstrip("/"))
        local_path = getattr(job.store, "local_path", None)
        if local_path is not None:  # a local store: map the files where they are
            try:
                done = local_path(f"{folder}/{TIMELINE_DONE}")
            except NotFound:
                raise NotFound(f"Job '{job.job_id}' has no complete timeline") from None
            full = TraceTimeline.open(Path(done).parent)
            saved = Path(done).parent / OVERVIEW_FILE
            return JobTimeline(full.lanes, saved.read_bytes() if saved.exists() else None, full)
        infos = list(job.store.list(folder + "/"))
        if not any(i.key.endswith("/" + TIMELINE_DONE) for i in infos):
            raise NotFound(f"Job '{job.job_id}' has no complete timeline")
        names = {i.key.rsplit("/", 1)[1] for i in infos}
        lanes = json.loads(job.store.get(f"{folder}/{LANES_FILE}"))
        overview = job.store.get(f"{folder}/{OVERVIEW_FILE}") if OVERVIEW_FILE in names else None
        return JobTimeline(
            lanes,
            overview,
            fetch=lambda index_here: self._local_copy(
                job.store, job.job_id, folder, infos, version, index_here
            ),
        )

    def _local_copy(
        self,
        store: ObjectStore,
        job_id: str,
        folder: str,
        infos: list[Any],
        version: tuple[str, str, int],
        index_here: Callable[[Path], None],
    ) -> Path:
        """The timeline's files under ``cache_dir`` (fetched, in parallel, unless already there):
        first what window queries need (the index), handed to ``index_here(folder)`` as soon as
        it is down, then the per-event columns."""
        parent = self.cache_dir / _safe(job_id)
        safe = _safe(f"{version[1]}-{version[2]}")
        target = parent / safe
        if (target / TIMELINE_DONE).exists():
            return target
        with self._fetching:
            if (target / TIMELINE_DONE).exists():
                return target
            parent.mkdir(parents=True, exist_ok=True)
            partial = Path(tempfile.mkdtemp(prefix=safe + ".", dir=parent))

            def fetch(key: str) -> None:
                with (partial / key.rsplit("/", 1)[1]).open("wb") as fh:
                    for chunk in store.stream(key):
                        fh.write(chunk)

            def index_file(info: Any) -> bool:
                name = info.key.rsplit("/", 1)[1]
                return name.startswith(INDEX_PREFIX) or name == LANES_FILE

            try:
                # The index, then the rest; largest first in each, so the long downloads overlap;
                # "done" last, as ingest wrote it.
                files = [i for i in sorted(infos, key=lambda i: -i.size) if not i.key.endswith("/done")]
                with ThreadPoolExecutor(FETCH_THREADS, thread_name_prefix="timeline-fetch") as pool:
                    list(pool.map(fetch, [i.key for i in files if index_file(i)]))
                    index_here(partial)
                    list(pool.map(fetch, [i.key for i in files if not index_file(i)]))
                (partial / TIMELINE_DONE).write_bytes(b"")
                shutil.rmtree(target, ignore_errors=True)
                partial.rename(target)
                for other in parent.glob(f"*-{version[2]}"):  # earlier versions (a re-ingested job)
                    if other != target and other.is_dir():
                        shutil.rmtree(other, ignore_errors=True)
            except BaseException:
                shutil.rmtree(partial, ignore_errors=True)
                raise
        return target


class JobTimeline:
    """One trace's timeline as the app serves it (see the module docstring).

    The same queries as :class:`TraceTimeline`. A window over the whole trace is answered from the
    overview written at ingest, cut to the lanes and counters asked for (its header says what it
    covers, so the page draws it like any answer), so the first view never touches the index;
    everything else is answered by the mapped files, waiting for them while they are fetched:
    windows for the index (the first part fetched), the event panel and search for all.
    """

    def __init__(
        self,
        lanes: dict[str, Any],
        overview: bytes | None,
        full: TraceTimeline | None = None,
        fetch: Callable[[Callable[[Path], None]], Path] | None = None,
    ) -> None:
        self.lanes = lanes
        self._overview = overview
        self._full = full
        self._index: TraceTimeline | None = None  # the index alone, while the rest comes down
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._index_done = threading.Event()
        if fetch is None:
            self._done.set()
            self._index_done.set()
        else:
            threading.Thread(target=self._fetch, args=(fetch,), name="timeline-fetch", daemon=True).start()

    def _fetch(self, fetch: Callable[[Callable[[Path], None]], Path]) -> None:
        try:
            self._full = TraceTimeline.open(fetch(self._index_here))
        except BaseException as exc:  # kept for the queries waiting on it
            self._error = exc
        finally:
            self._index_done.set()
            self._done.set()

    def _index_here(self, folder: Path) -> None:
        self._index = TraceTimeline.open(folder, details=False)
        self._index_done.set()

    def _for_windows(self) -> TraceTimeline:
        if self._full is None and self._index_done.wait(FETCH_WAIT_SECONDS) and self._index is not None:
            return self._index
        return self.full()

    @property
    def failed(self) -> bool:
        return self._error is not None

    def full(self) -> TraceTimeline:
        """The mapped timeline, once its files are here."""
        if not self._done.wait(FETCH_WAIT_SECONDS):
            raise Unavailable("The timeline is still being fetched from storage; try again shortly")
        if self._full is None:
            if isinstance(self._error, NotFound | Unavailable):
                raise self._error
            raise Unavailable(f"The timeline could not be fetched ({type(self._error).__name__})")
        return self._full

    def window_bytes(
        self,
        start: int,
        end: int,
        px: int,
        lanes: Sequence[int] | None = None,
        counters: Sequence[int] | None = None,
        min_px: float = 1.0,
    ) -> bytes:
        whole = start <= 0 and end >= int(self.lanes["t_end"]) and px <= 2 * OVERVIEW_PX and min_px == 1.0
        if self._overview is not None and whole:
            return select_window(self._overview, lanes, counters)
        return self._for_windows().window_bytes(start, end, px, lanes, counters, min_px)

    def overview(self) -> bytes:
        """The whole trace at ``OVERVIEW_PX`` columns, every lane and counter (what the page draws
        first, and under any view until its own answer lands)."""
        if self._overview is None:  # a job ingested before overviews were written
            self._overview = self._for_windows().window_bytes(
                0, max(int(self.lanes["t_end"]), 1), OVERVIEW_PX
            )
        return self._overview

    def event(self, event_id: int) -> dict[str, Any] | None:
        return self.full().event(event_id)

    def search(self, q: str, limit: int = 100, after: int | None = None) -> dict[str, Any]:
        return self.full().search(q, limit, after)

    def aggregate(
        self, start: int, end: int, lanes: Sequence[int] | None = None, limit: int = 15
    ) -> dict[str, Any]:
        return self.full().aggregate(start, end, lanes, limit)


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


__all__ = ["JobData", "JobTimeline", "live_captures"]
