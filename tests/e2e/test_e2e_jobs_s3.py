"""The S3 path: the SDK (a real process) registers a job with the hub (real HTTP), which hands out
presigned URLs; the files go straight to the S3 API (moto's server); ingest and the profiler app
then read the same bucket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
import testservices
import uvicorn

from profilerhub_core.jobstorage import open_job_store
from profilerhub_worker.ingest import IngestContext, ingest_job
from tests.support.hub import auth, wait_for
from tests.support.jobs import job_prefix

SCRIPT = r"""
import json, time
import profilerhub as ph
ph.init(job="s3-run", sample_interval_s=0.1, chunk_interval_s=0.3, flush_timeout_s=20)
for i in range(6):
    with ph.step(i):
        with ph.annotate("work"):
            time.sleep(0.02)
    ph.log_metric("train:loss", 1.0 / (i + 1), step=i)
print("FINISHED " + json.dumps(ph.finish()), flush=True)
"""


@pytest.fixture
def s3_hub(hub_settings: Any, hub_app: Any, s3_server: dict[str, str], s3_bucket: str) -> Iterator[Any]:
    """The hub on storage ``s3://<bucket>/hubdata``, served over real HTTP from a thread."""
    from profilerhub_hub.main import create_app

    settings = hub_settings.model_copy(
        update={"storage_url": f"s3://{s3_bucket}/hubdata", "s3_endpoint_url": s3_server["endpoint_url"]}
    )
    app = create_app(settings)
    port = testservices.free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "the hub serving", 30)
    app.state.url = f"http://127.0.0.1:{port}"
    yield app
    server.should_exit = True
    thread.join(10)
    app.state.services.engine.dispose()


def test_the_sdk_uploads_straight_to_s3_and_the_job_is_ingested_from_there(
    s3_hub: Any, s3_server: dict[str, str], s3_bucket: str, tmp_path: Path
) -> None:
    from tests.support.hub import Seed

    token = Seed(s3_hub).user_token("d1", "alice")
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
    env.update(PROFILERHUB_URL=s3_hub.state.url, PROFILERHUB_TOKEN=token)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    finish = json.loads(done.stdout.split("FINISHED ", 1)[1])
    assert finish["completed"] is True and finish["sink"] == "hub", finish
    job_id = finish["location"].rstrip("/").rsplit("/", 1)[-1]

    s3 = boto3.client("s3", endpoint_url=s3_server["endpoint_url"], region_name=s3_server["region"])
    listed = s3.list_objects_v2(Bucket=s3_bucket, Prefix=f"hubdata/{job_prefix(s3_hub, job_id)}raw/")
    keys = {o["Key"].rsplit("/raw/", 1)[1] for o in listed.get("Contents", [])}
    assert {"job.json", "_SUCCESS", "annotations/000001.jsonl.gz", "metrics/000001.jsonl.gz"} <= keys

    import httpx

    job = httpx.get(
        f"{s3_hub.state.url}/api/v1/domains/d1/users/alice/jobs/{job_id}", headers=auth(token)
    ).json()
    assert job["completed_at"] is not None and job["status"] == "InProgress"

    settings = s3_hub.state.services.settings
    ctx = IngestContext(
        sessions=s3_hub.state.services.sessions,
        store=open_job_store(settings),
        max_file_bytes=settings.job_max_file_bytes,
        max_trace_bytes=64 << 20,
        stale_after=timedelta(minutes=5),
    )
    assert ingest_job(job_id, ctx) == "Ready"
    summary = json.loads(
        s3.get_object(Bucket=s3_bucket, Key=f"hubdata/{job_prefix(s3_hub, job_id)}processed/summary.json")[
            "Body"
        ].read()
    )
    assert summary["steps"]["count"] == 6
    assert summary["annotations"][0]["name"] == "work" and summary["annotations"][0]["count"] == 6
    assert summary["metrics"]["train:loss"]["count"] == 6


def test_an_upload_grant_names_the_jobs_raw_key_and_checks_the_declared_size(s3_hub: Any) -> None:
    from fastapi.testclient import TestClient

    from tests.support.hub import Seed

    token = Seed(s3_hub).user_token("d1", "alice")
    with TestClient(s3_hub) as client:
        base = "/api/v1/domains/d1/users/alice/jobs"
        job = client.post(base, json={"name": "grants"}, headers=auth(token)).json()
        assert job["upload"]["mode"] == "s3"
        uploads = f"{base}/{job['job_id']}/uploads"
        grant = client.post(uploads, json={"path": "torch/t.json.gz", "size": 10}, headers=auth(token))
        assert grant.status_code == 200
        assert f"hubdata/{job_prefix(s3_hub, job['job_id'])}raw/torch/t.json.gz" in grant.json()["url"]
        too_big = client.post(uploads, json={"path": "big.json", "size": 1 << 40}, headers=auth(token))
        assert too_big.status_code == 413
        unsafe = client.post(uploads, json={"path": "../other/x.json"}, headers=auth(token))
        assert unsafe.status_code == 400
