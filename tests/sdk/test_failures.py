"""Storage that refuses or vanishes never breaks training: logged once, bounded, counted."""

from __future__ import annotations

import logging
import secrets
import threading
from pathlib import Path

import pytest

import profilerhub as ph
from profilerhub.sinks.local import LocalSink

from .conftest import sdk_records
from .fakehub import FakeHub, wait_for
from .rawfiles import files_of_dir, records


def test_an_unwritable_output_folder_is_logged_once_and_training_goes_on(
    tmp_path: Path, sdk_log: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a regular file where the output folder should go")
    ph.init(job="blocked", output=blocker / "traces", chunk_interval_s=0.05)
    for i in range(50):
        with ph.step(i), ph.annotate("work"):
            ph.log_metric("m", i)
    summary = ph.finish(timeout=2)

    errors = sdk_records(sdk_log, logging.ERROR)
    assert len(errors) == 1 and "cannot create" in errors[0].getMessage()
    assert summary["dropped_files"]["job.json"] == 2 and not summary["completed"]


def test_the_upload_queue_is_bounded_while_the_hub_is_down(
    fakehub: FakeHub, sdk_log: pytest.LogCaptureFixture
) -> None:
    run = ph.init(job="bounded", chunk_interval_s=0.05, max_pending_bytes=1 << 20)
    wait_for(lambda: fakehub.jobs, what="job registered")
    fakehub.stop()
    names = [secrets.token_hex(32) for _ in range(40_000)]  # random: gzip cannot shrink them much
    for name in names:
        with ph.annotate(name):
            pass
    wait_for(lambda: run.uploader.spilled.total() > 0, what="the queue to overflow")
    assert run.uploader._pending_bytes <= 1 << 20
    summary = ph.finish(timeout=0.5)

    assert summary["spilled_files"]["annotations"] >= 1 and summary["dropped_files"] == {}, summary
    messages = [r.getMessage() for r in sdk_records(sdk_log)]
    assert sum("upload queue full" in m for m in messages) == 1, messages


class _GatedSink(LocalSink):
    """A local folder that takes ``metrics/`` files only while ``gate`` is open: a slow hub."""

    def __init__(self, root: Path, job: str) -> None:
        super().__init__(root, job)
        self.gate = threading.Event()
        self.waiting = threading.Event()

    def put(self, path: str, data: bytes) -> None:
        if path.startswith("metrics/"):
            self.waiting.set()
            self.gate.wait(30)
        super().put(path, data)


def test_a_slow_sink_gets_fewer_larger_chunks_instead_of_a_growing_queue(tmp_path: Path) -> None:
    sink = _GatedSink(tmp_path, "slow")
    run = ph.init(job="slow", output=tmp_path, chunk_interval_s=600, sample_interval_s=60, _sink=sink)
    ph.log_metric("m", 0.0)
    run.flush_chunks(hold=True)
    wait_for(sink.waiting.is_set, what="the first metrics chunk in flight")
    for i in range(1, 11):  # ten cuts while the sink still holds the first chunk: all kept back
        ph.log_metric("m", float(i))
        run.flush_chunks(hold=True)
    assert run.chunks["metrics"] == 1 and len(run.metrics) == 10
    sink.gate.set()
    wait_for(lambda: not run.uploader.holding("metrics"), what="the first chunk taken")
    run.flush_chunks(hold=True)
    summary = ph.finish(timeout=10)

    files = files_of_dir(tmp_path / "slow")
    assert sorted(n for n in files if n.startswith("metrics/")) == [
        "metrics/000001.jsonl.gz",
        "metrics/000002.jsonl.gz",
    ]
    assert [r["value"] for r in records(files, "metrics")] == [float(i) for i in range(11)]
    assert summary["spilled_files"] == {} and summary["dropped_files"] == {}, summary
