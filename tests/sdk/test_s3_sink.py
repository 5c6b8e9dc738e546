"""The SDK writing straight to an S3 endpoint (moto's server over HTTP), no hub involved."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import boto3
import pytest

import profilerhub as ph

from .rawfiles import job_json, records
from .training import train


def _objects(s3_server: dict[str, str], bucket: str, prefix: str) -> dict[str, bytes]:
    s3 = boto3.client("s3", endpoint_url=s3_server["endpoint_url"], region_name=s3_server["region"])
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return {
        o["Key"][len(prefix) :]: s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listed
    }


def test_training_loop_writes_its_raw_layout_to_s3(
    torch: ModuleType, s3_server: dict[str, str], s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROFILERHUB_S3_ENDPOINT_URL", s3_server["endpoint_url"])
    ph.init(job="mlp-s3", output=f"s3://{s3_bucket}/team/traces", chunk_interval_s=0.2)
    train(torch, 4, print_loss=False)
    summary = ph.finish()

    assert summary["completed"] and summary["location"] == f"s3://{s3_bucket}/team/traces/mlp-s3/", summary
    files = _objects(s3_server, s3_bucket, "team/traces/mlp-s3/")
    assert {"job.json", "_SUCCESS"} <= set(files)
    assert job_json(files)["status"] == "Completed"
    assert any(p.startswith("system/") for p in files)
    assert [m["step"] for m in records(files, "metrics")] == [0, 1, 2, 3]


def test_a_job_name_used_before_under_the_prefix_gets_a_new_folder(
    s3_server: dict[str, str], s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server["endpoint_url"])
    first = ph.init(job="again", output=f"s3://{s3_bucket}/p")
    ph.finish()
    ph.init(job="again", output=f"s3://{s3_bucket}/p")
    summary = ph.finish()
    assert first.sink.location == f"s3://{s3_bucket}/p/again/"
    assert summary["location"] == f"s3://{s3_bucket}/p/again-2/"
    assert "job.json" in _objects(s3_server, s3_bucket, "p/again-2/")


def test_a_missing_bucket_is_logged_once_and_training_goes_on(
    s3_server: dict[str, str],
    s3_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server["endpoint_url"])
    ph.init(job="nobucket", output="s3://no-such-bucket-here/x", chunk_interval_s=0.1)
    for i in range(20):
        with ph.step(i), ph.annotate("work"):
            pass
    summary = ph.finish(timeout=5)
    errors = [r for r in caplog.records if r.name == "profilerhub" and r.levelname == "ERROR"]
    assert len(errors) == 1 and "NoSuchBucket" in errors[0].getMessage()
    assert summary["spilled_files"]["job.json"] == 1 and not summary["completed"]


def test_a_run_spilled_for_a_missing_bucket_is_delivered_once_the_bucket_exists(
    s3_server: dict[str, str], s3_bucket: str, monkeypatch: pytest.MonkeyPatch, _spill_dir_of_its_own: Path
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server["endpoint_url"])
    later = f"{s3_bucket}-later"
    ph.init(job="waits", output=f"s3://{later}/team", chunk_interval_s=0.05)
    for i in range(5):
        with ph.step(i), ph.annotate("work"):
            pass
    summary = ph.finish(timeout=5)
    assert summary["spill_dir"] and summary["dropped_files"] == {}

    boto3.client("s3", endpoint_url=s3_server["endpoint_url"], region_name=s3_server["region"]).create_bucket(
        Bucket=later
    )
    cmd = [sys.executable, "-m", "profilerhub.cli.main", "upload", "--spilled"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    files = _objects(s3_server, later, "team/waits/")
    assert {"job.json", "_SUCCESS"} <= set(files) and job_json(files)["status"] == "Completed"
    assert [r["step"] for r in records(files, "annotations") if r["kind"] == "step"] == list(range(5))
    assert not any(p.name.startswith("waits") for p in _spill_dir_of_its_own.iterdir())
