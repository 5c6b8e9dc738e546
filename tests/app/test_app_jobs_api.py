"""The profiler app's job API (in-process, with a real app token): it lists its owner's jobs and
serves their summaries from storage, and reads nothing outside its owner's folder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from profilerhub_app.main import create_app
from profilerhub_app.settings import AppServiceSettings
from profilerhub_core.apptokens import generate_signing_key, issue_app_token, public_key_pem
from profilerhub_worker.ingest import IngestContext, ingest_job
from tests.support.jobs import make_job, sdk_files

APP_ID = "0a1b2c3d-0000-4000-8000-000000000001"


@pytest.fixture
def app_client(ctx: IngestContext, tmp_path: Path) -> Iterator[TestClient]:
    key = generate_signing_key()
    settings = AppServiceSettings(
        id=APP_ID,
        owner="alice",
        owner_id="user-alice",
        domain="d1",
        public_key=public_key_pem(key),
        storage_url=(tmp_path / "store").as_uri(),
    )
    headers = {"Authorization": f"Bearer {issue_app_token(key, APP_ID, 'user-alice')}"}
    with TestClient(create_app(settings), headers=headers) as client:
        yield client


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

    listed = app_client.get(f"/apps/{APP_ID}/api/jobs")
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

    summary = app_client.get(f"/apps/{APP_ID}/api/jobs/{ready}/summary")
    assert summary.status_code == 200 and summary.headers["content-type"] == "application/json"
    assert summary.json()["steps"]["count"] == 3
    assert json.loads(summary.content)["metrics"]["train:loss"]["count"] == 3


@pytest.mark.parametrize("which", ["bob", "uploading", "dotdot", "encoded-dotdot"])
def test_the_app_serves_no_summary_outside_its_owners_ready_jobs(
    ctx: IngestContext, jobs_seed: Any, app_client: TestClient, which: str
) -> None:
    jobs_seed.user("d1", "bob")
    bobs, _ = make_job(ctx, sdk_files(), user="bob")
    assert ingest_job(bobs, ctx) == "Ready"
    uploading, _ = make_job(ctx, sdk_files(), complete=False)
    job_id = {
        "bob": bobs,
        "uploading": uploading,
        "dotdot": f"../../bob/jobs/{bobs}",
        "encoded-dotdot": f"..%2F..%2Fbob%2Fjobs%2F{bobs}",
    }[which]
    answer = app_client.get(f"/apps/{APP_ID}/api/jobs/{job_id}/summary")
    assert answer.status_code == 404
    assert "steps" not in answer.text


def test_the_job_api_needs_the_apps_token(app_client: TestClient) -> None:
    answer = app_client.get(f"/apps/{APP_ID}/api/jobs", headers={"Authorization": "Bearer forged"})
    assert answer.status_code == 401
