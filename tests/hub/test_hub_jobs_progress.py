"""A Processing job's ingest progress (traces and bytes done of its traces) in its description."""

from __future__ import annotations

from typing import Any

from profilerhub_core.db.models import Job
from profilerhub_core.jobstorage import place_of
from profilerhub_core.storage import layout
from profilerhub_worker.ingest import IngestContext, claim
from tests.support.hub import auth

JOBS = "/api/v1/domains/d1/users/alice/jobs"


def test_a_processing_jobs_description_says_how_many_traces_are_ingested(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any, ctx: IngestContext
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job = jobs_client.post(JOBS, json={"name": "ranks"}, headers=auth(token)).json()
    url = f"{JOBS}/{job['job_id']}"
    assert jobs_client.post(f"{url}/complete", headers=auth(token)).status_code == 202
    assert claim(ctx, job["job_id"]) is not None  # a worker took it
    described = jobs_client.get(url, headers=auth(token)).json()
    assert described["status"] == "Processing" and described["progress"] is None  # nothing said yet

    with ctx.sessions() as session:
        row = session.get(Job, job["job_id"])
        assert row is not None
        place = place_of(row)
    jobs_hub.state.services.storage.put(
        place.processed_key(layout.PROGRESS),
        b'{"traces_done": 3, "traces": 8, "bytes_done": 30, "bytes": 80}',
    )
    progress = jobs_client.get(url, headers=auth(token)).json()["progress"]
    assert progress == {"traces_done": 3, "traces": 8, "bytes_done": 30, "bytes": 80}
    listed = jobs_client.get(JOBS, headers=auth(token)).json()["items"]
    assert [j["progress"] for j in listed] == [None]  # the list reads no storage per job
