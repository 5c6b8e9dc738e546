"""Storage that refuses or vanishes never breaks training: logged once, bounded, counted."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

import pytest

import profilerhub as ph

from .conftest import sdk_records
from .fakehub import FakeHub, wait_for


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
