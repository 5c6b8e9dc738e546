"""The hub sink against FakeHub (a stand-in implementing the documented hub upload protocol)."""

from __future__ import annotations

import logging
import time
from types import ModuleType

import boto3
import pytest

import profilerhub as ph

from .conftest import sdk_records
from .fakehub import FakeHub, wait_for
from .rawfiles import job_json, records
from .training import PRINTED_LOSS, train


def test_job_is_registered_uploaded_and_completed_on_the_hub(torch: ModuleType, fakehub: FakeHub) -> None:
    ph.init(job="mlp-hub", chunk_interval_s=0.2, metric_definitions=[PRINTED_LOSS])
    train(torch, 4)
    summary = ph.finish()

    job = fakehub.job_named("mlp-hub")
    assert job.metric_definitions == [PRINTED_LOSS]
    assert job.completions == 1 and job.status == "Processing"
    assert summary["completed"] and summary["location"].endswith(f"/jobs/{job.job_id}")
    assert {"job.json", "_SUCCESS"} <= set(job.files)
    assert job.puts["job.json"] == 2  # written at the start (live) and rewritten at the end
    assert all(n == 1 for path, n in job.puts.items() if path != "job.json")
    meta = job_json(job.files)
    assert meta["status"] == "Completed" and meta["destination"]["job_id"] == job.job_id
    assert [r["step"] for r in records(job.files, "annotations") if r["kind"] == "step"] == [0, 1, 2, 3]
    # completion comes after every file
    methods = [(m, p) for m, p, _ in fakehub.requests if job.job_id in p]
    assert methods[-1] == ("POST", f"/api/v1/domains/research/users/alice/jobs/{job.job_id}/complete")


def test_hub_down_half_way_training_finishes_and_buffered_data_arrives_when_it_returns(
    torch: ModuleType, fakehub: FakeHub, sdk_log: pytest.LogCaptureFixture
) -> None:
    ph.init(job="flaky", chunk_interval_s=0.1)
    job = wait_for(lambda: fakehub.jobs and next(iter(fakehub.jobs.values())), what="job registered")
    down_at = 3

    def after_step(i: int) -> None:
        if i == down_at:
            assert sdk_records(sdk_log) == []
            fakehub.stop()
            # Let a chunk be attempted (and fail) while the hub is down.
            wait_for(lambda: sdk_records(sdk_log), what="a failed upload to be logged")
        if i == down_at + 3:
            fakehub.start()

    train(torch, 10, after_step=after_step)
    summary = ph.finish(timeout=20)

    assert summary["completed"] and summary["dropped_files"] == {}, summary
    assert job.completions == 1
    steps = [r["step"] for r in records(job.files, "annotations") if r["kind"] == "step"]
    assert sorted(steps) == list(range(10))
    warnings = sdk_records(sdk_log)
    assert len(warnings) == 1 and "retrying" in warnings[0].getMessage()


def test_hub_down_at_the_end_spills_what_is_left_and_returns_in_time(
    torch: ModuleType, fakehub: FakeHub, sdk_log: pytest.LogCaptureFixture
) -> None:
    ph.init(job="gone", chunk_interval_s=0.1)
    wait_for(lambda: fakehub.jobs, what="job registered")
    fakehub.stop()
    train(torch, 3)
    t0 = time.monotonic()
    summary = ph.finish(timeout=1.5)
    assert time.monotonic() - t0 < 5
    assert not summary["completed"] and not summary["complete_sent"] and summary["dropped_files"] == {}
    assert summary["spilled_files"]["annotations"] >= 1 and summary["spilled_files"]["_SUCCESS"] == 1
    messages = [r.getMessage() for r in sdk_records(sdk_log)]
    assert len(messages) == 2, messages  # one "retrying", one final account of what was spilled
    assert "not delivered" in messages[-1] and "profilerhub upload --spilled" in messages[-1]


def test_bad_token_is_logged_once_and_everything_is_spilled(
    torch: ModuleType, fakehub: FakeHub, sdk_log: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROFILERHUB_TOKEN", "forged")
    ph.init(job="denied", chunk_interval_s=0.1)
    train(torch, 5)
    summary = ph.finish(timeout=5)

    assert fakehub.jobs == {}
    assert [s for _, _, s in fakehub.requests] == [401]
    errors = sdk_records(sdk_log, logging.ERROR)
    assert len(errors) == 1 and "rejected the token" in errors[0].getMessage()
    assert summary["spilled_files"]["job.json"] == 1 and summary["spilled_files"]["annotations"] >= 1
    assert summary["dropped_files"] == {} and summary["spill_dir"]


def test_hub_in_s3_mode_hands_out_presigned_urls_and_files_land_in_the_bucket(
    torch: ModuleType, s3_server: dict[str, str], s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = FakeHub(mode="s3", s3=s3_server, bucket=s3_bucket)
    hub.start()
    try:
        monkeypatch.setenv("PROFILERHUB_URL", hub.url)
        monkeypatch.setenv("PROFILERHUB_TOKEN", hub.token)
        ph.init(job="via-s3", chunk_interval_s=0.2)
        train(torch, 3)
        summary = ph.finish()
    finally:
        hub.stop()
    assert summary["completed"], summary
    job = hub.job_named("via-s3")
    s3 = boto3.client("s3", endpoint_url=s3_server["endpoint_url"], region_name=s3_server["region"])
    prefix = hub.s3_key(job, "")
    listed = s3.list_objects_v2(Bucket=s3_bucket, Prefix=prefix)["Contents"]
    files = {
        o["Key"][len(prefix) :]: s3.get_object(Bucket=s3_bucket, Key=o["Key"])["Body"].read() for o in listed
    }
    assert job.files == {}  # nothing went through the hub itself
    assert {"job.json", "_SUCCESS"} <= set(files) and job.completions == 1
    assert job_json(files)["status"] == "Completed"
    assert [r["step"] for r in records(files, "annotations") if r["kind"] == "step"] == [0, 1, 2]


def test_a_hub_that_stops_answering_cannot_hold_finish_past_its_timeout(
    fakehub: FakeHub, sdk_log: pytest.LogCaptureFixture
) -> None:
    ph.init(job="stalled", chunk_interval_s=0.05)
    wait_for(lambda: fakehub.jobs, what="job registered")
    fakehub.stalled.set()
    for i in range(20):
        with ph.step(i), ph.annotate("work"):
            pass
    t0 = time.monotonic()
    summary = ph.finish(timeout=1.0)
    assert time.monotonic() - t0 < 5  # not the 30 s HTTP timeout
    assert not summary["completed"] and summary["spilled_files"]["_SUCCESS"] == 1
    assert not [r for r in sdk_records(sdk_log, logging.ERROR)]
