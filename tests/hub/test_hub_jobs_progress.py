"""A Processing job's ingest progress (traces and bytes done of its traces) in its description."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from typing import Any

import pytest

from profilerhub_core.db.models import Job, utcnow
from profilerhub_core.jobstorage import place_of
from profilerhub_core.storage import layout
from profilerhub_worker.ingest import IngestContext, claim
from profilerhub_worker.ingest.claim import UserAtLimit
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


def test_a_completed_job_beyond_its_owners_share_says_it_waits_for_their_other_ingests(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any, ctx: IngestContext
) -> None:
    """Alice completes three jobs; workers claim two (her share, ``job_ingest_jobs_per_user`` = 2):
    the third stays InProgress and says why, in its description and in the list, as the worker's
    claim decides it (it refuses the third); a claim whose worker died no longer counts."""
    token = jobs_seed.user_token("d1", "alice")
    share = jobs_hub.state.services.settings.job_ingest_jobs_per_user
    assert share == 2
    ids = []
    for n in range(3):
        job_id = jobs_client.post(JOBS, json={"name": f"run-{n}"}, headers=auth(token)).json()["job_id"]
        assert jobs_client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
        ids.append(job_id)
    first, second, third = ids

    def reason(job_id: str) -> tuple[str, str | None]:
        got = jobs_client.get(f"{JOBS}/{job_id}", headers=auth(token)).json()
        return got["status"], got["status_reason"]

    assert reason(third) == ("InProgress", "Queued: uploaded, waiting for an ingest worker")
    assert claim(ctx, first) is not None and claim(ctx, second) is not None
    waiting = "Waiting: 2 of your jobs are ingesting (limit 2)"
    assert reason(third) == ("InProgress", waiting)
    listed = {
        j["job_id"]: j["status_reason"] for j in jobs_client.get(JOBS, headers=auth(token)).json()["items"]
    }
    assert listed == {first: None, second: None, third: waiting}
    with pytest.raises(UserAtLimit):  # the worker's claim holds it back by the same count
        claim(dataclasses.replace(ctx, jobs_per_user=share), third)

    with ctx.sessions() as session:  # the first's worker died: its heartbeat is long gone
        row = session.get(Job, first)
        assert row is not None
        row.ingest_heartbeat_at = row.updated_at = utcnow() - timedelta(hours=2)
        session.commit()
    assert reason(third) == ("InProgress", "Queued: uploaded, waiting for an ingest worker")


def test_a_processing_job_with_more_traces_than_its_window_says_how_many_wait(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any, ctx: IngestContext
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    window = jobs_hub.state.services.settings.job_ingest_traces_per_job
    job_id = jobs_client.post(JOBS, json={"name": "ranks"}, headers=auth(token)).json()["job_id"]
    assert jobs_client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
    assert claim(ctx, job_id) is not None
    with ctx.sessions() as session:
        row = session.get(Job, job_id)
        assert row is not None
        place = place_of(row)
    progress = {"traces_done": 4, "traces": window + 10, "bytes_done": 30, "bytes": 80}
    jobs_hub.state.services.storage.put(place.processed_key(layout.PROGRESS), json.dumps(progress).encode())
    got = jobs_client.get(f"{JOBS}/{job_id}", headers=auth(token)).json()
    assert got["status_reason"] == (
        f"Ingesting {window} traces at a time (limit {window} per job); 6 wait their turn"
    )
    progress["traces_done"] = 10 + 1  # fewer left than the window: nothing waits
    jobs_hub.state.services.storage.put(place.processed_key(layout.PROGRESS), json.dumps(progress).encode())
    assert jobs_client.get(f"{JOBS}/{job_id}", headers=auth(token)).json()["status_reason"] is None
