"""A running job's on-demand capture traces are ingested as they arrive, by a real Celery worker on
a real Redis (``INGEST_CAPTURES``): each into ``processed/live/captures/<id>/`` with its entry in
``live/captures.json``, a broken one recorded with its reason, nothing done twice; the app then
opens the capture's timeline and views while the job is still InProgress, and the job's own
ingest reads the capture with its other traces. The hub sends the task when a capture trace is
uploaded through it, and the live scan for a job with captures asked."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from profilerhub_core.db.models import Job, JobStatus
from profilerhub_core.errors import NotFound
from profilerhub_core.records import jobs
from profilerhub_core.storage import layout
from profilerhub_core.tasks import INGEST_CAPTURES
from profilerhub_worker.ingest import IngestContext, ingest_job
from profilerhub_worker.ingest.captures import ingest_captures
from profilerhub_worker.ingest.live_rules import evaluate_running_jobs
from tests.support.hub import auth, wait_for
from tests.support.jobs import ingest_worker, make_job, open_app, sdk_files

CPU_TRACE = "traces/torch-cpu/mlp_cpu_10steps_stack.pt.trace.json.gz"
GOOD = "torch/host_1.capture-0a1b2c3d4e5f.1.pt.trace.json.gz"
BROKEN = "torch/host_1.capture-ffff00001111.1.pt.trace.json.gz"


def _captures(ctx: IngestContext, place: Any) -> list[dict[str, Any]]:
    try:
        return list(json.loads(ctx.store.get(place.processed_key(layout.LIVE_CAPTURES)))["traces"])
    except NotFound:
        return []


def test_capture_traces_of_a_running_job_are_ingested_by_the_worker_and_open_in_the_app(
    ctx: IngestContext,
    shared_dir: Path,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
    jobs_hub: Any,
    jobs_client: TestClient,
    tmp_path: Path,
) -> None:
    trace = (shared_dir / CPU_TRACE).read_bytes()
    files = sdk_files(steps=3) | {"torch/host_1.1.pt.trace.json.gz": trace, GOOD: trace}
    job_id, place = make_job(ctx, files, complete=False)
    with ingest_worker(ctx, redis_url, monkeypatch) as app:
        app.send_task(INGEST_CAPTURES, args=[job_id])
        wait_for(lambda: len(_captures(ctx, place)) == 1, "the capture ingested", 60)
        ctx.store.put(place.raw_key(BROKEN), gzip.compress(b'{"traceEvents": [')[:-4])  # cut short
        app.send_task(INGEST_CAPTURES, args=[job_id])
        wait_for(lambda: len(_captures(ctx, place)) == 2, "the broken capture recorded", 60)
    good, broken = _captures(ctx, place)
    assert (good["file"], good["capture"], broken["capture"]) == (GOOD, "0a1b2c3d4e5f", "ffff00001111")
    assert good["timeline"] == "processed/live/captures/0a1b2c3d4e5f/timeline/" and "error" not in good
    assert ctx.store.exists(place.processed_key("live/captures/0a1b2c3d4e5f/timeline/done"))
    assert len(good["report"]["steps"]) == 10  # the sample trace's ProfilerStep ranges
    assert broken["error"] and "timeline" not in broken
    assert ingest_captures(job_id, ctx) == 0  # nothing new: nothing read again
    assert all("capture-" not in c["file"] or c["capture"] for c in _captures(ctx, place))

    with open_app(ctx, jobs_hub, jobs_client, tmp_path / "store", "alice") as client:
        live = client.get(f"api/jobs/{job_id}/live").json()
        assert live["status"] == "InProgress"
        assert [(c["capture"], c.get("index"), c.get("steps")) for c in live["captures"]] == [
            ("0a1b2c3d4e5f", 0, 10), ("ffff00001111", None, None),
        ]  # fmt: skip
        lanes = client.get(f"api/jobs/{job_id}/timeline/lanes", params={"trace": 0})
        assert lanes.status_code == 200, lanes.text
        assert lanes.json()["trace"]["file"] == GOOD
        window = client.get(f"api/jobs/{job_id}/timeline/window", params={"trace": 0, "overview": 1})
        assert window.status_code == 200 and len(window.content) > 0
        views = client.get(f"api/jobs/{job_id}/views", params={"trace": 0})
        assert views.status_code == 200, views.text
        assert views.json()["views"]["tb_overview"]
        assert client.get(f"api/jobs/{job_id}/timeline/lanes", params={"trace": 1}).status_code == 404
        assert client.get(f"api/jobs/{job_id}/dashboard").status_code == 404  # the full one: when Ready

    with ctx.sessions() as session:
        row = session.get(Job, job_id)
        assert row is not None
        jobs.mark_complete(session, row)
        session.commit()
    assert ingest_captures(job_id, ctx) == 0  # completed: the job's ingest has them now
    ctx.store.delete(place.raw_key(BROKEN))
    assert ingest_job(job_id, ctx) == "Ready"
    summary = json.loads(ctx.store.get(place.processed_key(layout.SUMMARY)))
    assert sorted(t["file"] for t in summary["traces"]) == ["torch/host_1.1.pt.trace.json.gz", GOOD]
    assert _captures(ctx, place) == []  # processed/ started from nothing


def test_the_hub_and_the_live_scan_send_the_capture_task(
    ctx: IngestContext, jobs_hub: Any, jobs_client: TestClient, jobs_seed: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    url = "/api/v1/domains/d1/users/alice/jobs"
    job_id = jobs_client.post(url, json={"name": "run"}, headers=auth(token)).json()["job_id"]
    sent = jobs_hub.state.services.app_tasks.sent
    plain = jobs_client.put(
        f"{url}/{job_id}/files/torch/host_1.1.pt.trace.json.gz", content=b"{}", headers=auth(token)
    )
    assert plain.status_code == 201 and (INGEST_CAPTURES, job_id) not in sent
    upload = jobs_client.put(f"{url}/{job_id}/files/{GOOD}", content=b"{}", headers=auth(token))
    assert upload.status_code == 201 and sent[-1] == (INGEST_CAPTURES, job_id)

    ctx_sent: list[tuple[str, str]] = ctx.sent  # type: ignore[attr-defined]
    evaluate_running_jobs(ctx, scan_interval=0)
    assert (INGEST_CAPTURES, job_id) not in ctx_sent  # no capture asked: nothing to look for
    with ctx.sessions() as session:
        row = session.get(Job, job_id)
        assert row is not None and row.status is JobStatus.InProgress
        jobs.add_capture(session, row, {"id": "0a1b2c3d4e5f", "steps": 2})
        session.commit()
    evaluate_running_jobs(ctx, scan_interval=0)
    assert (INGEST_CAPTURES, job_id) in ctx_sent
