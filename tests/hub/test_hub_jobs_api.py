"""The job API in-process, on SQLite and PostgreSQL: create, upload, complete, list, delete, and
what it refuses (other users' jobs, unsafe paths, oversized files, late uploads)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from profilerhub_core.errors import Unavailable
from profilerhub_core.outage import STORAGE
from profilerhub_core.storage import LocalStore
from profilerhub_core.storage.observed import observed
from profilerhub_core.tasks import INGEST_JOB
from tests.support.hub import auth
from tests.support.jobs import job_prefix, sdk_files

JOBS = "/api/v1/domains/d1/users/alice/jobs"


def _create(client: Any, token: str, name: str = "resnet50-bs64", base: str = JOBS) -> dict[str, Any]:
    response = client.post(base, json={"name": name}, headers=auth(token))
    assert response.status_code == 201, response.text
    return response.json()


def _raw_files(hub: Any) -> list[str]:
    root = Path(hub.state.services.settings.storage_url.removeprefix("file://"))
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_user_creates_uploads_and_completes_a_job(jobs_client: Any, jobs_seed: Any, jobs_hub: Any) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job = _create(jobs_client, token)
    assert job["status"] == "InProgress" and job["upload"]["mode"] == "hub"
    url = f"{JOBS}/{job['job_id']}"
    for path, data in sdk_files().items():
        response = jobs_client.put(f"{url}/files/{path}", content=data, headers=auth(token))
        assert response.status_code == 201, response.text
        assert response.json() == {"path": path, "size": len(data)}
    assert f"{job_prefix(jobs_hub, job['job_id'])}raw/annotations/000001.jsonl.gz" in _raw_files(jobs_hub)

    response = jobs_client.post(f"{url}/complete", headers=auth(token))
    assert response.status_code == 202
    assert response.json()["completed_at"] is not None and response.json()["upload"] is None
    assert jobs_hub.state.services.app_tasks.sent == [(INGEST_JOB, job["job_id"])]

    listed = jobs_client.get(JOBS, params={"status": "InProgress"}, headers=auth(token)).json()
    assert [j["job_id"] for j in listed["items"]] == [job["job_id"]]
    assert jobs_client.get(JOBS, params={"status": "Ready"}, headers=auth(token)).json()["items"] == []


def test_completing_twice_is_harmless_and_sends_ingest_again(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job = _create(jobs_client, token)
    for _ in range(2):
        assert jobs_client.post(f"{JOBS}/{job['job_id']}/complete", headers=auth(token)).status_code == 202
    assert jobs_hub.state.services.app_tasks.sent == [(INGEST_JOB, job["job_id"])] * 2


def test_files_cannot_be_added_after_complete(jobs_client: Any, jobs_seed: Any) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job = _create(jobs_client, token)
    jobs_client.post(f"{JOBS}/{job['job_id']}/complete", headers=auth(token))
    response = jobs_client.put(f"{JOBS}/{job['job_id']}/files/late.json", content=b"{}", headers=auth(token))
    assert response.status_code == 409
    assert "before it is completed" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "who", [("d1", "bob", "user"), ("d2", "carol", "admin")], ids=["other-user", "other-domain-admin"]
)
def test_others_cannot_see_or_touch_a_users_job(
    jobs_client: Any, jobs_seed: Any, who: tuple[str, str, str]
) -> None:
    owner = jobs_seed.user_token("d1", "alice")
    job = _create(jobs_client, owner)
    other = jobs_seed.user_token(*who)
    url = f"{JOBS}/{job['job_id']}"
    attempts = [
        jobs_client.get(url, headers=auth(other)),
        jobs_client.get(JOBS, headers=auth(other)),
        jobs_client.put(f"{url}/files/x.json", content=b"{}", headers=auth(other)),
        jobs_client.post(f"{url}/complete", headers=auth(other)),
        jobs_client.delete(url, headers=auth(other)),
        jobs_client.post(JOBS, json={"name": "mine"}, headers=auth(other)),
    ]
    assert [r.status_code for r in attempts] == [404] * 6
    assert all(r.json()["error"]["code"] == "ResourceNotFound" for r in attempts)
    assert jobs_client.get(url, headers=auth(owner)).json()["status"] == "InProgress"


def test_a_job_id_of_the_same_user_under_another_user_path_is_not_found(
    jobs_client: Any, jobs_seed: Any
) -> None:
    admin = jobs_seed.user_token("d1", "root", role="admin")
    jobs_seed.user("d1", "bob")
    jobs_seed.user("d1", "alice")
    job = _create(jobs_client, admin)  # the admin makes a job for alice
    response = jobs_client.get(f"/api/v1/domains/d1/users/bob/jobs/{job['job_id']}", headers=auth(admin))
    assert response.status_code == 404


@pytest.mark.parametrize(
    "path", ["..%2Fescape.json", "a/%2E%2E/%2E%2E/x.json", "a%5Cb.json", "bad%00name.json", "a//b.json"]
)
def test_unsafe_file_paths_are_refused_and_nothing_is_written(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any, path: str
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job = _create(jobs_client, token)
    response = jobs_client.put(f"{JOBS}/{job['job_id']}/files/{path}", content=b"{}", headers=auth(token))
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "ValidationError"
    assert _raw_files(jobs_hub) == []


def test_a_file_over_the_limit_gets_413_and_nothing_is_stored(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job = _create(jobs_client, token)
    url = f"{JOBS}/{job['job_id']}/files"
    declared = jobs_client.put(f"{url}/big.json", content=b"x" * ((1 << 20) + 1), headers=auth(token))
    assert declared.status_code == 413
    assert "limit of 1048576 bytes per file" in declared.json()["error"]["message"]

    def chunks() -> Any:  # no Content-Length: refused while streaming
        for _ in range(20):
            yield b"y" * (64 << 10)

    streamed = jobs_client.put(f"{url}/big2.json", content=chunks(), headers=auth(token))
    assert streamed.status_code == 413
    assert _raw_files(jobs_hub) == []


def test_the_job_total_limit_counts_every_file(jobs_client: Any, jobs_seed: Any, jobs_hub: Any) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job = _create(jobs_client, token)
    url = f"{JOBS}/{job['job_id']}/files"
    part = b"z" * (900 << 10)
    assert jobs_client.put(f"{url}/a.bin", content=part, headers=auth(token)).status_code == 201
    assert jobs_client.put(f"{url}/a.bin", content=part, headers=auth(token)).status_code == 201  # replaced
    assert jobs_client.put(f"{url}/b.bin", content=part, headers=auth(token)).status_code == 201
    third = jobs_client.put(f"{url}/c.bin", content=part, headers=auth(token))
    assert third.status_code == 413
    assert "limit of 2097152 bytes" in third.json()["error"]["message"]
    assert len(_raw_files(jobs_hub)) == 2


def test_deleting_a_job_removes_its_objects(jobs_client: Any, jobs_seed: Any, jobs_hub: Any) -> None:
    token = jobs_seed.user_token("d1", "alice")
    keep, gone = _create(jobs_client, token, "keep"), _create(jobs_client, token, "gone")
    for job in (keep, gone):
        jobs_client.put(f"{JOBS}/{job['job_id']}/files/job.json", content=b"{}", headers=auth(token))
    assert jobs_client.delete(f"{JOBS}/{gone['job_id']}", headers=auth(token)).status_code == 204
    assert jobs_client.get(f"{JOBS}/{gone['job_id']}", headers=auth(token)).status_code == 404
    assert _raw_files(jobs_hub) == [f"{job_prefix(jobs_hub, keep['job_id'])}raw/job.json"]
    events = jobs_client.get(
        "/api/v1/audit", params={"action": "DeleteJob"}, headers=auth(jobs_seed.admin_token)
    )
    assert events.json()["items"][0]["target"] == gone["job_id"]


def test_jobs_are_listed_newest_first_a_page_at_a_time(jobs_client: Any, jobs_seed: Any) -> None:
    token = jobs_seed.user_token("d1", "alice")
    made = [_create(jobs_client, token, f"run-{i}")["job_id"] for i in range(5)]
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        page = jobs_client.get(JOBS, params=params, headers=auth(token)).json()
        seen += [j["job_id"] for j in page["items"]]
        if not page["next_token"]:
            break
        params["next_token"] = page["next_token"]
    assert seen == made[::-1]


@pytest.mark.parametrize(
    "body",
    [
        {"name": "../x"},
        {"name": "ok", "metric_definitions": [{"Name": "loss", "Regex": "("}]},
        {"name": "ok", "metric_definitions": [{"Name": f"m{i}", "Regex": "x"} for i in range(41)]},
        {"name": "ok", "extra": 1},
    ],
    ids=["bad-name", "bad-regex", "41-definitions", "unknown-field"],
)
def test_invalid_job_requests_are_refused(jobs_client: Any, jobs_seed: Any, body: dict[str, Any]) -> None:
    token = jobs_seed.user_token("d1", "alice")
    response = jobs_client.post(JOBS, json=body, headers=auth(token))
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "ValidationError"
    assert jobs_client.get(JOBS, headers=auth(token)).json()["items"] == []


class _FlakyStore(LocalStore):
    """A local store whose writes fail as a full disk does while ``down``."""

    down = False

    def put_stream(self, key: str, chunks: Any, *, max_bytes: int | None = None) -> int:
        if self.down:
            raise Unavailable("storage is full: no space left on device")
        return super().put_stream(key, chunks, max_bytes=max_bytes)


def test_a_storage_outage_is_logged_once_when_it_starts_and_once_when_it_ends(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    STORAGE.recovered()  # the process's one storage tracker: up, whatever an earlier test left
    caplog.clear()
    store = _FlakyStore(tmp_path / "flaky")
    jobs_hub.state.services.storage = observed(store)
    token = jobs_seed.user_token("d1", "alice")
    url = f"{JOBS}/{_create(jobs_client, token)['job_id']}/files"
    store.down = True
    with caplog.at_level(logging.INFO):
        for n in range(4):
            refused = jobs_client.put(f"{url}/{n}.json", content=b"{}", headers=auth(token))
            assert refused.status_code == 503 and "no space left" in refused.json()["error"]["message"]
        store.down = False
        assert jobs_client.put(f"{url}/ok.json", content=b"{}", headers=auth(token)).status_code == 201
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 2, lines
    assert "storage unreachable (Unavailable: storage is full" in lines[0]
    assert "storage answers again" in lines[1] and "(4 failed calls)" in lines[1]
