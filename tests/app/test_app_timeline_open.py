"""How the profiler app opens a job's timeline: mapped in place on a local store, and on S3 (moto
over HTTP) answering the first view from the overview while the files come down."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from profilerhub_analysis.timeline.binary import decode_window
from profilerhub_analysis.timeline.bundle import OVERVIEW_PX, TraceTimeline
from profilerhub_app.jobdata import JobData, JobTimeline
from profilerhub_app.owned import OwnedJob
from profilerhub_core.errors import NotFound
from profilerhub_core.storage import ObjectStore, open_store
from tests.analysis.tracegen import annotation, kernel, runtime, store_of

JOB = "j-0001"
FOLDER = f"jobs/{JOB}/processed/traces/0-t/timeline"


def _built() -> TraceTimeline:
    events = [annotation("step 1", 0, 100)]
    for i in range(40):
        events += [
            runtime("cudaLaunchKernel", 1 + i * 2, 1, correlation=i),
            kernel(f"k{i % 3}", 3 + i * 2, 1.5, i),
        ]
    return TraceTimeline.build(store_of(events), source="t")


def _job(store: ObjectStore, built: TraceTimeline, done: bool = True) -> OwnedJob:
    for name, data in built.to_files().items():
        store.put(f"{FOLDER}/{name}", data)
    if done:
        store.put(f"{FOLDER}/done", b"")
    return OwnedJob(store, {"job_id": JOB, "status": "Ready", "updated_at": "2026-01-01T00:00:00"})


class ArraysHeldBack:
    """A store whose ``.npy`` downloads wait until ``release`` is set (a slow link to S3); with
    ``index_too=False`` only the per-event columns wait."""

    def __init__(self, store: ObjectStore, index_too: bool = True) -> None:
        self._store = store
        self.index_too = index_too
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def stream(self, key: str, *args: Any) -> Any:
        held = key.endswith(".npy") and (self.index_too or not key.rsplit("/", 1)[1].startswith("index."))
        if held:
            assert self.release.wait(60), "the test never released the download"
        return self._store.stream(key, *args)


def _open(jd: JobData, job: OwnedJob) -> Any:
    jd._summaries.fetch(  # the summary entry ingest writes, as if read from summary.json
        (JOB, job.record["updated_at"], "Ready"),
        lambda: {"traces": [{"timeline": "processed/traces/0-t/timeline/"}]},
    )
    return jd.timeline(job, 0)


def test_a_local_store_timeline_is_mapped_where_ingest_wrote_it_copying_nothing(tmp_path: Path) -> None:
    built = _built()
    store = open_store((tmp_path / "store").as_uri())
    jd = JobData(str(tmp_path / "cache"), open_timelines=2)
    opened = _open(jd, _job(store, built))
    mapped = opened.full().index._ts
    assert isinstance(mapped, np.memmap)
    assert Path(str(mapped.filename)).is_relative_to(tmp_path / "store")
    assert not (tmp_path / "cache").exists()
    end = built.lanes["t_end"]
    assert opened.window_bytes(1, end // 2, 500) == built.window_bytes(1, end // 2, 500)
    assert _open(jd, _job(store, built)) is opened  # kept open


def test_the_whole_trace_is_answered_from_the_overview_cut_to_the_lanes_asked_for(tmp_path: Path) -> None:
    built = _built()
    store = open_store((tmp_path / "store").as_uri())
    opened = _open(JobData(str(tmp_path / "cache"), 2), _job(store, built))
    end = built.lanes["t_end"]
    lane = built.lanes["groups"][-1]["lanes"][0]["lane_id"]
    counter = built.lanes["counters"][0]["counter_id"]
    for lanes, counters in ((None, None), ([lane, 999], [counter]), ([], [])):
        answer = opened.window_bytes(-end // 2, end * 3 // 2, 2000, lanes, counters)
        expected = built.window_bytes(0, end, OVERVIEW_PX, lanes, counters)
        assert decode_window(answer)[0] == decode_window(expected)[0]
        assert answer == expected


def test_a_half_written_local_timeline_is_not_found(tmp_path: Path) -> None:
    store = open_store((tmp_path / "store").as_uri())
    with pytest.raises(NotFound):
        _open(JobData(str(tmp_path / "cache"), 2), _job(store, _built(), done=False))


def test_an_s3_timeline_answers_the_first_view_from_the_overview_then_from_its_fetched_files(
    s3_bucket: str, s3_server: dict[str, str], tmp_path: Path
) -> None:
    built = _built()
    store = ArraysHeldBack(open_store(f"s3://{s3_bucket}/u1", s3_endpoint_url=s3_server["endpoint_url"]))
    jd = JobData(str(tmp_path / "cache"), open_timelines=2)
    opened = _open(jd, _job(store, built))  # type: ignore[arg-type]
    assert isinstance(opened, JobTimeline)
    end = built.lanes["t_end"]
    assert opened.lanes == built.lanes
    # What the page asks first (the whole trace, half a view each side, twice its width).
    assert opened.window_bytes(-end // 2, end * 3 // 2, 2000) == built.window_bytes(0, end, OVERVIEW_PX)
    assert not (tmp_path / "cache" / JOB).exists() or not any((tmp_path / "cache" / JOB).glob("*/done"))
    store.release.set()
    full = opened.full()  # waits for the background fetch
    assert isinstance(full.index._ts, np.memmap)
    assert opened.window_bytes(10, end // 2, 300) == built.window_bytes(10, end // 2, 300)
    kernel_id = next(m["id"] for m in built.search("k1")["matches"])
    assert opened.event(kernel_id) == built.event(kernel_id)
    assert opened.search("k2") == built.search("k2")
    (copy,) = (tmp_path / "cache" / JOB).iterdir()
    assert (copy / "done").exists() and not copy.name.startswith(".")


def test_an_s3_timeline_answers_windows_once_its_index_is_down_before_the_event_columns(
    s3_bucket: str, s3_server: dict[str, str], tmp_path: Path
) -> None:
    built = _built()
    s3 = open_store(f"s3://{s3_bucket}/u2", s3_endpoint_url=s3_server["endpoint_url"])
    store = ArraysHeldBack(s3, index_too=False)
    opened = _open(JobData(str(tmp_path / "cache"), 2), _job(store, built))  # type: ignore[arg-type]
    end = built.lanes["t_end"]
    assert opened.window_bytes(10, end // 2, 300) == built.window_bytes(10, end // 2, 300)
    assert not opened._done.is_set()  # the event columns are still held back
    store.release.set()
    kernel_id = next(m["id"] for m in built.search("k1")["matches"])
    assert opened.event(kernel_id) == built.event(kernel_id)
