"""The profiler app's job API (in-process, with a real app token and the in-process hub it asks):
it lists exactly the jobs the hub says its owner has, serves their summaries from storage, and
reads nothing outside those jobs' folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.records import domains, jobs, users
from profilerhub_core.storage import layout
from profilerhub_worker.ingest import IngestContext, ingest_job
from tests.support.hub import auth
from tests.support.jobs import make_job, open_app, sdk_files


def test_the_app_lists_its_owners_jobs_and_serves_a_summary(
    ctx: IngestContext, jobs_seed: Any, app_client: TestClient
) -> None:
    jobs_seed.user("d1", "bob")
    ready, _ = make_job(ctx, sdk_files(steps=3))
    failed, _ = make_job(ctx, {"torch/t.json": b"{not json"})
    uploading, _ = make_job(ctx, sdk_files(), complete=False)
    bobs, _ = make_job(ctx, sdk_files(), user="bob")
    assert ingest_job(ready, ctx) == "Ready" and ingest_job(failed, ctx) == "Failed"
    assert ingest_job(bobs, ctx) == "Ready"

    listed = app_client.get("api/jobs")
    assert listed.status_code == 200
    by_id = {job["job_id"]: job for job in listed.json()["items"]}
    assert set(by_id) == {ready, failed, uploading}
    assert (by_id[ready]["status"], by_id[ready]["name"], by_id[ready]["has_summary"]) == (
        "Ready",
        "demo",
        True,
    )
    assert by_id[failed]["status"] == "Failed"
    assert by_id[failed]["failure_reason"].startswith("raw/torch/t.json: not valid JSON")
    assert (by_id[uploading]["status"], by_id[uploading]["name"]) == ("InProgress", "demo")

    summary = app_client.get(f"api/jobs/{ready}/summary")
    assert summary.status_code == 200 and summary.headers["content-type"] == "application/json"
    assert summary.json()["steps"]["count"] == 3
    assert json.loads(summary.content)["metrics"]["train:loss"]["count"] == 3


@pytest.mark.parametrize("which", ["bob", "uploading", "dotdot", "encoded-dotdot"])
def test_the_app_serves_no_summary_outside_its_owners_ready_jobs(
    ctx: IngestContext, jobs_seed: Any, app_client: TestClient, which: str
) -> None:
    jobs_seed.user("d1", "bob")
    bobs, bobs_place = make_job(ctx, sdk_files(), user="bob")
    bob_id = bobs_place.user_id
    assert ingest_job(bobs, ctx) == "Ready"
    uploading, _ = make_job(ctx, sdk_files(), complete=False)
    job_id = {
        "bob": bobs,
        "uploading": uploading,
        "dotdot": f"../../bob/jobs/{bobs}",
        "encoded-dotdot": f"..%2F..%2F{bob_id}%2Fjobs%2F{bobs}",
    }[which]
    answer = app_client.get(f"api/jobs/{job_id}/summary")
    assert answer.status_code == 404
    assert "steps" not in answer.text


def test_the_job_api_needs_the_apps_token(app_client: TestClient) -> None:
    answer = app_client.get("api/jobs", headers={"Authorization": "Bearer forged"})
    assert answer.status_code == 401


def test_objects_of_a_job_the_hub_does_not_list_are_never_shown(
    ctx: IngestContext, app_client: TestClient
) -> None:
    ready, place = make_job(ctx, sdk_files())
    assert ingest_job(ready, ctx) == "Ready"
    # What a crash between a job row's delete and its objects' delete leaves behind:
    leftover = place.prefix.replace(ready, "0ld-j0b")
    ctx.store.put(leftover + "processed/summary.json", b'{"steps": {"count": 99}}')
    ctx.store.put(leftover + "raw/job.json", b'{"job": "gone"}')

    listed = app_client.get("api/jobs").json()["items"]
    assert [job["job_id"] for job in listed] == [ready]
    assert app_client.get("api/jobs/0ld-j0b/summary").status_code == 404


def _delete(client: TestClient, token: str, path: str) -> None:
    answer = client.delete(f"/api/v1/{path}", headers=auth(token))
    assert answer.status_code == 204, answer.text


def _post(client: TestClient, token: str, path: str, body: dict[str, Any]) -> None:
    answer = client.post(f"/api/v1/{path}", headers=auth(token), json=body)
    assert answer.status_code == 201, answer.text


@pytest.mark.parametrize("what", ["user", "domain"])
def test_a_new_owner_of_a_deleted_name_sees_nothing_of_the_old_one(
    ctx: IngestContext, jobs_hub: Any, jobs_seed: Any, jobs_client: TestClient, tmp_path: Path, what: str
) -> None:
    admin = jobs_seed.admin_token
    jobs_hub.state.services.storage = ctx.store  # the hub deletes from the store ingest wrote to
    jobs_seed.user("d2", "carol")
    old_job, old_place = _carols_job(ctx)
    assert ingest_job(old_job, ctx) == "Ready"
    assert list(ctx.store.list(old_place.prefix))

    _delete(jobs_client, admin, "domains/d2/users/carol")
    if what == "domain":
        _delete(jobs_client, admin, "domains/d2")
        _post(jobs_client, admin, "domains", {"name": "d2"})
    _post(jobs_client, admin, "domains/d2/users", {"name": "carol"})

    gone = (
        layout.domain_prefix(old_place.domain_id)
        if what == "domain"
        else layout.user_prefix(old_place.domain_id, old_place.user_id)
    )
    assert list(ctx.store.list(gone)) == []  # deleted with their owner
    with open_app(ctx, jobs_hub, jobs_client, tmp_path / "store", "carol", domain="d2") as new_carol:
        assert new_carol.get("api/jobs").json()["items"] == []
        assert new_carol.get(f"api/jobs/{old_job}/summary").status_code == 404
        new_job, new_place = _carols_job(ctx)
        assert new_place.user_id != old_place.user_id
        assert [job["job_id"] for job in new_carol.get("api/jobs").json()["items"]] == [new_job]


def _carols_job(ctx: IngestContext) -> tuple[str, Any]:
    with ctx.sessions() as session:
        domain = domains.require_domain(session, "d2")
        owner = users.get_user(session, domain, "carol")
        assert owner is not None
        job = jobs.create_job(session, domain, owner, "carols")
        jobs.mark_complete(session, job)
        session.commit()
        job_id, place = job.id, JobPlace(domain.id, owner.id, job.id)
    for name, data in sdk_files().items():
        ctx.store.put(place.raw_key(name), data)
    return job_id, place
