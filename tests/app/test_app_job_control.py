"""The app's log, Stop and Capture routes (in-process, with a real app token and the in-process hub
they ask): a running job's printed lines page by page from ``next_offset`` and per rank, a stop and
a capture recorded on the job as REST's are (audited through the ``app`` door), the hub's refusals
passed on with its reasons, and nothing of another user's job."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from profilerhub_core.db.models import Job
from profilerhub_core.jobstorage import place_of
from profilerhub_worker.ingest import IngestContext
from tests.support.hub import auth
from tests.support.jobs import jsonl_gz, make_job, open_app

T0 = 1_700_000_000_000_000_000
JOB_JSON = {"format": "profilerhub-raw/1", "job": "demo", "status": "InProgress", "start_ns": 1,
            "torch_version": "2.13.0", "torch_profiler": None}  # fmt: skip


def _put(hub: Any, job_id: str, files: dict[str, bytes]) -> None:
    """Files of the job in the hub's store (where the hub reads logs and job.json)."""
    with hub.state.services.sessions() as session:
        place = place_of(session.get(Job, job_id))
    for name, data in files.items():
        hub.state.services.storage.put(place.raw_key(name), data)


def _lines(rank: int, first: int, n: int) -> bytes:
    return jsonl_gz(
        [{"ts_ns": T0 + (first + i) * 1000, "source": "stdout", "message": f"rank {rank} line {first + i}"}
         for i in range(n)]
    )  # fmt: skip


def test_the_log_of_a_running_job_pages_from_next_offset_and_per_rank(
    ctx: IngestContext, jobs_hub: Any, app_client: TestClient
) -> None:
    job_id, _ = make_job(ctx, {}, complete=False)
    _put(jobs_hub, job_id, {"logs/rank0/000001.jsonl.gz": _lines(0, 0, 5)})
    first = app_client.get(f"api/jobs/{job_id}/logs", params={"limit": 3})
    assert first.status_code == 200, first.text
    doc = first.json()
    assert [line["message"] for line in doc["lines"]] == ["rank 0 line 0", "rank 0 line 1", "rank 0 line 2"]
    assert (doc["ranks"], doc["rank"], doc["total"], doc["next_offset"]) == ([0], 0, 5, 3)
    assert doc["stream"].startswith("demo/algo-1-")

    # more lines arrive; asking from next_offset gives exactly the new ones
    _put(
        jobs_hub,
        job_id,
        {"logs/rank0/000002.jsonl.gz": _lines(0, 5, 2), "logs/rank1/000001.jsonl.gz": _lines(1, 0, 1)},
    )
    more = app_client.get(f"api/jobs/{job_id}/logs", params={"offset": doc["next_offset"]}).json()
    assert [line["message"] for line in more["lines"]] == [f"rank 0 line {i}" for i in (3, 4, 5, 6)]
    assert (more["ranks"], more["next_offset"]) == ([0, 1], 7)
    rank1 = app_client.get(f"api/jobs/{job_id}/logs", params={"rank": 1}).json()
    assert [line["message"] for line in rank1["lines"]] == ["rank 1 line 0"]

    missing = app_client.get(f"api/jobs/{job_id}/logs", params={"rank": 7})
    assert missing.status_code == 404 and "no log of rank 7" in missing.json()["error"]["message"]
    for bad in ({"rank": "x"}, {"offset": "-1"}, {"limit": "0"}, {"limit": "10001"}):
        answer = app_client.get(f"api/jobs/{job_id}/logs", params=bad)
        assert answer.status_code == 400, (bad, answer.text)
        assert answer.json()["error"]["code"] == "ValidationError"


def test_stop_and_capture_from_the_app_are_the_hubs_requests_audited_through_the_app_door(
    ctx: IngestContext, jobs_hub: Any, jobs_client: TestClient, jobs_seed: Any, app_client: TestClient
) -> None:
    job_id, _ = make_job(ctx, {}, complete=False)
    refused = app_client.post(f"api/jobs/{job_id}/captures", json={"steps": 2})
    assert (
        refused.status_code == 409
        and "not run through the ProfilerHub SDK" in refused.json()["error"]["message"]
    )
    _put(jobs_hub, job_id, {"job.json": json.dumps(JOB_JSON).encode()})

    capture = app_client.post(f"api/jobs/{job_id}/captures", json={"steps": 3, "record_shapes": True})
    assert capture.status_code == 202, capture.text
    assert {k: capture.json()[k] for k in ("steps", "start_step", "record_shapes", "by")} == {
        "steps": 3, "start_step": None, "record_shapes": True, "by": "d1/alice",
    }  # fmt: skip
    for bad in ({"steps": 0}, {"steps": "3"}, {"steps": 2, "mode": "x"}, {}, [1]):
        answer = app_client.post(f"api/jobs/{job_id}/captures", json=bad)
        assert answer.status_code == 400, (bad, answer.text)
    not_json = app_client.post(f"api/jobs/{job_id}/captures", content=b"{steps")
    assert not_json.status_code == 400

    stopped = app_client.post(f"api/jobs/{job_id}/stop")
    assert stopped.status_code == 202, stopped.text
    assert stopped.json()["stop_request"]["actor"] == "d1/alice"
    listed = app_client.get(f"api/jobs/{job_id}").json()
    assert listed["stop_request"]["by"] == "user" and [c["steps"] for c in listed["captures"]] == [3]
    assert app_client.post(f"api/jobs/{job_id}/stop").status_code == 202  # again: nothing new

    admin = auth(jobs_seed.admin_token)
    audit = jobs_client.get("/api/v1/audit", params={"target": job_id}, headers=admin).json()["items"]
    done = sorted((row["action"], row["detail"]["via"]) for row in audit if row["outcome"] == "success")
    assert done == [("StopJob", "app"), ("UpdateJob", "app")]

    with ctx.sessions() as session:  # the run is over: the hub's reason comes back
        row = session.get(Job, job_id)
        assert row is not None
        row.completed_at = row.created_at
        session.commit()
    over = app_client.post(f"api/jobs/{job_id}/captures", json={"steps": 1})
    assert over.status_code == 409 and "not running" in over.json()["error"]["message"]


def test_the_app_reaches_no_other_users_job_log_stop_or_capture(
    ctx: IngestContext,
    jobs_hub: Any,
    jobs_client: TestClient,
    jobs_seed: Any,
    app_client: TestClient,
    tmp_path: Any,
) -> None:
    jobs_seed.user("d1", "bob")
    bobs, _ = make_job(ctx, {}, complete=False, user="bob")
    _put(
        jobs_hub,
        bobs,
        {"logs/rank0/000001.jsonl.gz": _lines(0, 0, 2), "job.json": json.dumps(JOB_JSON).encode()},
    )
    for method, what, body in (
        ("GET", "logs", None),
        ("POST", "stop", None),
        ("POST", "captures", {"steps": 1}),
    ):
        answer = app_client.request(method, f"api/jobs/{bobs}/{what}", json=body)
        assert answer.status_code == 404, (what, answer.text)
    assert app_client.get("api/jobs/..%2Fx/logs").status_code == 404
    with ctx.sessions() as session:
        row = session.get(Job, bobs)
        assert row is not None and row.stop_request is None and not row.captures
    # bob's own app reads it (the hub answers each app for its own owner)
    with open_app(ctx, jobs_hub, jobs_client, tmp_path / "bobstore", "bob") as bob_app:
        assert bob_app.get(f"api/jobs/{bobs}/logs").json()["total"] == 2
