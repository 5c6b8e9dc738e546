"""Rules through the real hub: configured per job (jobs API) or per domain, evaluated at ingest,
read with ``GET …/jobs/{job_id}/rules``; bad configurations refused; others' rules not found."""

from __future__ import annotations

import json
from typing import Any

import pytest

from profilerhub_core.db.models import Job
from profilerhub_core.jobstorage import place_of
from profilerhub_worker.ingest import ingest_job
from tests.support.hub import auth
from tests.support.jobs import sdk_files, stalled_sdk_files

JOBS = "/api/v1/domains/d1/users/alice/jobs"


def _ingested(client: Any, ctx: Any, token: str, body: dict[str, Any], files: dict[str, bytes]) -> str:
    response = client.post(JOBS, json=body, headers=auth(token))
    assert response.status_code == 201, response.text
    job_id = response.json()["job_id"]
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        assert job is not None
        place = place_of(job)
    for name, data in files.items():
        ctx.store.put(place.raw_key(name), data)
    assert client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
    assert ingest_job(job_id, ctx) == "Ready"
    return str(job_id)


def test_rules_configured_on_the_job_are_evaluated_at_ingest_and_read_back(
    jobs_client: Any, jobs_seed: Any, ctx: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    body = {
        "name": "stall",
        "rules": ["Dataloader", {"rule": "StepOutlier", "parameters": {"n_outliers": 0}}],
    }
    job_id = _ingested(jobs_client, ctx, token, body, stalled_sdk_files())
    out = jobs_client.get(f"{JOBS}/{job_id}/rules", headers=auth(token)).json()
    assert out["final"] is True and out["evaluated_at"] and out["status"] == "IssuesFound"
    assert [c["rule"] for c in out["configured"]] == ["Dataloader", "StepOutlier"]
    dataloader = out["rules"][0]
    assert dataloader["status"] == "IssuesFound"
    stall = next(f for f in dataloader["findings"] if "fetch_ms" in f["figures"])
    assert stall["figures"]["fetch_ms"] == 500.0 and stall["end_ns"] - stall["start_ns"] == 500_000_000
    assert out["rules"][1]["parameters"] == {"stddev": 3.0, "n_outliers": 0}
    # also stored for readers of storage alone (the profiler app)
    with ctx.sessions() as session:
        place = place_of(session.get(Job, job_id))
    stored = json.loads(ctx.store.get(place.processed_key("rules.json")))
    assert stored["rules"] == out["rules"]


def test_a_job_without_rules_runs_the_domains_default_else_profiler_report(
    jobs_client: Any, jobs_seed: Any, ctx: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job_id = _ingested(jobs_client, ctx, token, {"name": "plain"}, sdk_files())
    out = jobs_client.get(f"{JOBS}/{job_id}/rules", headers=auth(token)).json()
    assert [r["rule"] for r in out["rules"]] == ["ProfilerReport"]
    gpu = next(r for r in out["rules"][0]["rules"] if r["rule"] == "LowGPUUtilization")
    assert gpu["status"] == "Error" and gpu["reason"].startswith("no GPU samples")

    patch = {"settings": {"rules": [{"rule": "StepOutlier", "parameters": {"stddev": 1}}]}}
    response = jobs_client.patch("/api/v1/domains/d1", json=patch, headers=auth(jobs_seed.admin_token))
    assert response.status_code == 200, response.text
    job_id = _ingested(jobs_client, ctx, token, {"name": "plain2"}, sdk_files())
    out = jobs_client.get(f"{JOBS}/{job_id}/rules", headers=auth(token)).json()
    assert [(r["rule"], r["parameters"]["stddev"]) for r in out["rules"]] == [("StepOutlier", 1.0)]


def test_rules_of_a_job_not_ingested_yet_are_in_progress(jobs_client: Any, jobs_seed: Any) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job_id = jobs_client.post(
        JOBS, json={"name": "x", "rules": ["CPUBottleneck"]}, headers=auth(token)
    ).json()["job_id"]
    out = jobs_client.get(f"{JOBS}/{job_id}/rules", headers=auth(token)).json()
    assert out["status"] == "InProgress" and out["rules"][0]["rule"] == "CPUBottleneck"
    assert out["rules"][0]["status"] == "InProgress"


@pytest.mark.parametrize(
    "rules",
    [["NoSuchRule"], [{"rule": "CPUBottleneck", "parameters": {"threshold": 500}}], ["StepOutlier"] * 21,
     [{"rule": "ProfilerReport", "parameters": {"CPUBottleneck_nope": 1}}]],
)  # fmt: skip
def test_bad_rule_configurations_are_refused_and_nothing_is_created(
    jobs_client: Any, jobs_seed: Any, rules: list[Any]
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    response = jobs_client.post(JOBS, json={"name": "bad", "rules": rules}, headers=auth(token))
    assert 400 <= response.status_code < 500 and set(response.json()["error"]) == {"code", "message"}
    assert jobs_client.get(JOBS, headers=auth(token)).json()["items"] == []
    patch = {"settings": {"rules": rules}}
    response = jobs_client.patch("/api/v1/domains/d1", json=patch, headers=auth(jobs_seed.admin_token))
    assert 400 <= response.status_code < 500


def test_a_user_cannot_read_another_users_rules(jobs_client: Any, jobs_seed: Any) -> None:
    alice = jobs_seed.user_token("d1", "alice")
    bob = jobs_seed.user_token("d1", "bob")
    job_id = jobs_client.post(JOBS, json={"name": "x"}, headers=auth(alice)).json()["job_id"]
    assert jobs_client.get(f"{JOBS}/{job_id}/rules", headers=auth(bob)).status_code == 404
    bobs_path = f"/api/v1/domains/d1/users/bob/jobs/{job_id}/rules"
    assert jobs_client.get(bobs_path, headers=auth(bob)).status_code == 404
