"""What the hub does not take is spilled to local disk and delivered later, exactly once."""

from __future__ import annotations

import json
import logging
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import profilerhub as ph
from profilerhub import _spill

from .conftest import sdk_records
from .fakehub import FakeHub, FakeJob, after_closing_calls, wait_for
from .rawfiles import records


def _loop(steps: int) -> None:
    for i in range(steps):
        with ph.step(i), ph.annotate("work"):
            ph.log_metric("loss", 1.0 / (i + 1))


def _steps(job: FakeJob) -> list[int]:
    return sorted(r["step"] for r in records(job.files, "annotations") if r["kind"] == "step")


def _upload_spilled(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "profilerhub.cli.main", "upload", "--spilled", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _spill_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_a_run_while_the_hub_is_down_is_spilled_and_the_next_run_delivers_it_once(
    fakehub: FakeHub, _spill_dir_of_its_own: Path, sdk_log: pytest.LogCaptureFixture
) -> None:
    fakehub.stop()
    ph.init(job="offline", chunk_interval_s=0.05)
    _loop(8)
    summary = ph.finish(timeout=1.0)

    assert not summary["complete_sent"] and summary["dropped_files"] == {}
    assert summary["spilled_files"]["job.json"] == 1 and summary["spilled_files"]["_SUCCESS"] == 1
    (entry,) = _spill.entries(_spill_dir_of_its_own)
    meta = _spill.read_meta(entry)
    assert meta["job"] == "offline" and meta["sink"] == "hub" and meta["location"] == fakehub.url
    assert "hub_job" not in meta  # never registered: the delivery registers it
    warning = sdk_records(sdk_log)[-1].getMessage()
    assert f"profilerhub upload --spilled --spill-dir {_spill_dir_of_its_own} --hub {fakehub.url}" in warning

    fakehub.start()
    run = ph.init(job="online", chunk_interval_s=0.05)
    assert run.delivery is not None
    run.delivery.join(60)
    _loop(2)
    ph.finish(timeout=10)

    delivered = fakehub.job_named("offline")
    assert _steps(delivered) == list(range(8)) and delivered.completions == 1
    assert all(n == 1 for n in delivered.puts.values()), delivered.puts  # nothing sent twice
    assert json.loads(delivered.files["job.json"])["status"] == "Completed"
    assert fakehub.job_named("online").completions == 1
    assert _spill.entries(_spill_dir_of_its_own) == []


def test_profilerhub_upload_spilled_finishes_the_job_the_run_registered(
    fakehub: FakeHub, _spill_dir_of_its_own: Path
) -> None:
    ph.init(job="cut-off", chunk_interval_s=0.05)
    job = wait_for(lambda: fakehub.jobs and next(iter(fakehub.jobs.values())), what="job registered")
    fakehub.stop()
    _loop(6)
    summary = ph.finish(timeout=1.0)
    assert not summary["complete_sent"] and summary["spilled_files"]

    after_closing_calls()  # the hub comes back once the run's closing call has given up
    fakehub.start()
    done = _upload_spilled()
    assert done.returncode == 0, done.stderr
    assert "delivered" in done.stderr and job.job_id in done.stderr
    assert len(fakehub.jobs) == 1  # the same job, not a second one
    assert job.completions == 1 and _steps(job) == list(range(6))
    assert _spill.entries(_spill_dir_of_its_own) == []
    again = _upload_spilled()
    assert again.returncode == 0 and "nothing spilled" in again.stderr


def test_a_bad_token_spills_the_run_registers_nothing_and_a_good_token_delivers_it(
    fakehub: FakeHub,
    _spill_dir_of_its_own: Path,
    monkeypatch: pytest.MonkeyPatch,
    sdk_log: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("PROFILERHUB_TOKEN", "forged")
    ph.init(job="denied", chunk_interval_s=0.05)
    _loop(4)
    summary = ph.finish(timeout=5)
    assert fakehub.jobs == {} and summary["spill_dir"]
    errors = sdk_records(sdk_log, logging.ERROR)
    assert len(errors) == 1 and "rejected the token" in errors[0].getMessage()

    refused = _upload_spilled("--token", "still-forged")
    assert refused.returncode == 2 and "rejected the token" in refused.stderr
    assert "PROFILERHUB_TOKEN" in refused.stderr and fakehub.jobs == {}
    assert len(_spill.entries(_spill_dir_of_its_own)) == 1  # kept for the next try

    done = _upload_spilled("--token", fakehub.token)
    assert done.returncode == 0, done.stderr
    job = fakehub.job_named("denied")
    assert job.completions == 1 and _steps(job) == list(range(4))


def test_complete_carries_the_count_of_files_the_hub_refused(
    fakehub: FakeHub, _spill_dir_of_its_own: Path
) -> None:
    fakehub.refuse["_SUCCESS"] = 413
    ph.init(job="partly", chunk_interval_s=0.05)
    _loop(3)
    summary = ph.finish(timeout=10)

    job = fakehub.job_named("partly")
    assert summary["complete_sent"] and summary["spilled_files"] == {"_SUCCESS": 1}
    (report,) = job.reports
    assert report["missing_files"] == 1 and report["lost_files"] == 0
    assert report["spill"]["dir"] == summary["spill_dir"] and report["spill"]["files"] == 1
    assert report["spill"]["command"].startswith("profilerhub upload --spilled")


def test_the_spill_folder_never_grows_past_its_cap(
    fakehub: FakeHub, _spill_dir_of_its_own: Path, sdk_log: pytest.LogCaptureFixture
) -> None:
    cap = 300_000
    fakehub.stop()
    ph.init(job="capped", chunk_interval_s=0.05, max_pending_bytes=1 << 20, spill_max_bytes=cap)
    for _ in range(60):
        with ph.annotate(secrets.token_hex(20_000)):  # random names: chunks gzip cannot shrink
            pass
        ph.current_run().flush_chunks()  # type: ignore[union-attr]
    summary = ph.finish(timeout=0.5)

    used = sum(p.stat().st_size for p in _spill_dir_of_its_own.rglob("*") if p.is_file())
    assert summary["dropped_files"] and summary["spilled_files"], summary
    assert summary["spilled_bytes"] <= cap and used <= cap + 4096  # + the small .spill.json
    messages = [r.getMessage() for r in sdk_records(sdk_log)]
    assert sum("at its cap" in m for m in messages) == 1, messages
    (entry,) = _spill.entries(_spill_dir_of_its_own)
    assert _spill.read_meta(entry)["lost_files"] == sum(summary["dropped_files"].values())


def test_an_entry_being_delivered_elsewhere_is_skipped_not_sent_twice(
    fakehub: FakeHub, _spill_dir_of_its_own: Path
) -> None:
    fakehub.stop()
    ph.init(job="contended", chunk_interval_s=0.05)
    _loop(2)
    ph.finish(timeout=0.5)
    fakehub.start()
    (entry,) = _spill.entries(_spill_dir_of_its_own)
    sent: list[Any] = []
    with _spill.locked(entry) as mine:
        assert mine
        outcome = _spill.deliver_spills(_spill_dir_of_its_own, lambda e, m: sent.append(e))
    assert outcome["busy"] == [entry] and sent == [] and fakehub.jobs == {}
    assert entry.is_dir()


def test_spilling_is_off_with_a_zero_cap(fakehub: FakeHub, _spill_dir_of_its_own: Path) -> None:
    fakehub.stop()
    ph.init(job="nospill", chunk_interval_s=0.05, spill_max_bytes=0)
    _loop(2)
    summary = ph.finish(timeout=0.5)
    assert summary["spilled_files"] == {} and summary["dropped_files"]["_SUCCESS"] == 1
    assert _spill_files(_spill_dir_of_its_own) == []
