"""``complete`` with files missing, their later delivery, and the per-user storage quota, through
the API in-process on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from profilerhub_core.db.models import Job, JobStatus
from profilerhub_core.records.job_states import transition
from profilerhub_core.tasks import INGEST_JOB
from tests.support.hub import auth
from tests.support.jobs import sdk_files

JOBS = "/api/v1/domains/d1/users/alice/jobs"
MISSING = {
    "missing_files": 3,
    "lost_files": 1,
    "spill": {
        "host": "node-7",
        "dir": "/home/alice/.cache/profilerhub/spill/run-1",
        "files": 2,
        "command": "profilerhub upload --spilled --hub http://hub:8000",
    },
}


def _job(client: Any, token: str, name: str = "partly", files: dict[str, bytes] | None = None) -> str:
    made = client.post(JOBS, json={"name": name}, headers=auth(token))
    assert made.status_code == 201, made.text
    job_id = str(made.json()["job_id"])
    for path, data in (files if files is not None else sdk_files()).items():
        put = client.put(f"{JOBS}/{job_id}/files/{path}", content=data, headers=auth(token))
        assert put.status_code == 201, put.text
    return job_id


def _ingested(hub: Any, job_id: str, **figures: Any) -> None:
    """Move the job as ingest would: InProgress -> Processing -> Ready (with the list's ``figures``)."""
    with hub.state.services.sessions() as session:
        assert transition(session, job_id, JobStatus.InProgress, JobStatus.Processing)
        assert transition(session, job_id, JobStatus.Processing, JobStatus.Ready, **figures)
        session.commit()


def test_complete_records_what_is_missing_and_the_job_says_how_to_deliver_it(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job_id = _job(jobs_client, token)
    done = jobs_client.post(f"{JOBS}/{job_id}/complete", json=MISSING, headers=auth(token))
    assert done.status_code == 202, done.text
    body = done.json()
    assert body["status"] == "InProgress" and body["upload"] is None
    assert body["undelivered"]["missing_files"] == 3
    (warning,) = body["warnings"]
    assert warning.startswith("3 file(s) not delivered") and "node-7" in warning
    assert "`profilerhub upload --spilled --hub http://hub:8000`" in warning and "1 lost" in warning
    assert jobs_hub.state.services.app_tasks.sent == [(INGEST_JOB, job_id)]

    _ingested(jobs_hub, job_id)
    ready = jobs_client.get(f"{JOBS}/{job_id}", headers=auth(token)).json()
    assert ready["status"] == "Ready" and ready["upload"] is not None  # it takes the spilled files
    assert ready["warnings"] == [warning]
    # The first complete repeated (a retry after a lost answer) changes nothing.
    again = jobs_client.post(f"{JOBS}/{job_id}/complete", json=MISSING, headers=auth(token))
    assert again.status_code == 202 and again.json()["status"] == "Ready"


def test_the_spilled_files_arriving_later_send_a_ready_job_back_to_ingest(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    files = sdk_files()
    late = {"_SUCCESS": files.pop("_SUCCESS")}
    job_id = _job(jobs_client, token, files=files)
    assert jobs_client.post(f"{JOBS}/{job_id}/complete", json=MISSING, headers=auth(token)).status_code == 202
    _ingested(jobs_hub, job_id, duration_s=2.5, steps=5, gpus=1, ranks=1)

    for path, data in late.items():
        put = jobs_client.put(f"{JOBS}/{job_id}/files/{path}", content=data, headers=auth(token))
        assert put.status_code == 201, put.text
    lost = {"missing_files": 1, "lost_files": 1}
    done = jobs_client.post(f"{JOBS}/{job_id}/complete", json=lost, headers=auth(token))
    assert done.status_code == 202, done.text
    body = done.json()
    assert body["status"] == "InProgress" and body["completed_at"] is not None and body["upload"] is None
    assert body["undelivered"] == {"missing_files": 1, "lost_files": 1}
    assert jobs_hub.state.services.app_tasks.sent == [(INGEST_JOB, job_id)] * 2
    with jobs_hub.state.services.sessions() as session:  # old figures gone until ingest writes new
        row = session.get(Job, job_id)
        assert row is not None
        assert (row.duration_s, row.steps, row.gpus, row.ranks) == (None, None, None, None)
    # Once ingested again nothing is awaited: a further file is refused.
    _ingested(jobs_hub, job_id)
    refused = jobs_client.put(f"{JOBS}/{job_id}/files/extra.json", content=b"{}", headers=auth(token))
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "ResourceInUse"


def test_a_job_completed_with_everything_takes_no_files_once_ready(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job_id = _job(jobs_client, token)
    assert jobs_client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
    _ingested(jobs_hub, job_id)
    read = jobs_client.get(f"{JOBS}/{job_id}", headers=auth(token)).json()
    assert read["upload"] is None and read["undelivered"] is None and read["warnings"] == []
    put = jobs_client.put(f"{JOBS}/{job_id}/files/_SUCCESS", content=b"{}", headers=auth(token))
    assert put.status_code == 409


@pytest.mark.parametrize(
    "body",
    [
        {"missing_files": -1},
        {"missing_files": "3"},
        {"missing_files": 1, "extra": True},
        {"missing_files": 1, "spill": {"host": "h" * 300}},
        [1, 2],
    ],
)
def test_a_bad_complete_body_is_refused_and_changes_nothing(
    jobs_client: Any, jobs_seed: Any, body: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job_id = _job(jobs_client, token, files={})
    refused = jobs_client.post(f"{JOBS}/{job_id}/complete", json=body, headers=auth(token))
    assert refused.status_code == 422, refused.text
    assert set(refused.json()["error"]) >= {"code", "message"}
    read = jobs_client.get(f"{JOBS}/{job_id}", headers=auth(token)).json()
    assert read["completed_at"] is None and read["undelivered"] is None


def test_the_storage_quota_counts_every_job_of_the_user_and_refuses_with_what_to_do(
    jobs_client: Any, jobs_seed: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    for refused_value in (-1, "1000", True):
        body = {"settings": {"user_storage_quota_bytes": refused_value}}
        bad = jobs_client.patch("/api/v1/domains/d1", json=body, headers=auth(jobs_seed.admin_token))
        assert bad.status_code == 422, bad.text
    body = {"settings": {"user_storage_quota_bytes": 1000}}
    set_quota = jobs_client.patch("/api/v1/domains/d1", json=body, headers=auth(jobs_seed.admin_token))
    assert set_quota.status_code == 200 and set_quota.json()["settings"]["user_storage_quota_bytes"] == 1000
    first = _job(jobs_client, token, "first", files={"a.bin": b"x" * 600})
    # Replacing a file counts it once, not twice.
    again = jobs_client.put(f"{JOBS}/{first}/files/a.bin", content=b"y" * 600, headers=auth(token))
    assert again.status_code == 201
    second = _job(jobs_client, token, "second", files={"b.bin": b"z" * 300})

    refused = jobs_client.put(f"{JOBS}/{second}/files/c.bin", content=b"w" * 200, headers=auth(token))
    assert refused.status_code == 413, refused.text
    error = refused.json()["error"]
    assert error["code"] == "StorageQuotaExceeded"
    message = error["message"]
    assert "quota of 1000 bytes" in message and "900 bytes are stored" in message
    assert "200 bytes" in message and "Delete jobs" in message and "user_storage_quota_bytes" in message
    listed = jobs_client.get(f"{JOBS}/{second}", headers=auth(token)).json()
    assert listed["status"] == "InProgress"

    # Deleting a job frees its share of the quota.
    assert jobs_client.delete(f"{JOBS}/{first}", headers=auth(token)).status_code == 204
    fits = jobs_client.put(f"{JOBS}/{second}/files/c.bin", content=b"w" * 200, headers=auth(token))
    assert fits.status_code == 201, fits.text


def test_other_users_have_quotas_of_their_own(jobs_client: Any, jobs_seed: Any) -> None:
    jobs_seed.domain("d1", user_storage_quota_bytes=500)
    alice = jobs_seed.user_token("d1", "alice")
    bob = jobs_seed.user_token("d1", "bob")
    _job(jobs_client, alice, "full", files={"a.bin": b"x" * 500})
    made = jobs_client.post("/api/v1/domains/d1/users/bob/jobs", json={"name": "b"}, headers=auth(bob))
    put = jobs_client.put(
        f"/api/v1/domains/d1/users/bob/jobs/{made.json()['job_id']}/files/b.bin",
        content=b"y" * 500,
        headers=auth(bob),
    )
    assert put.status_code == 201, put.text
