"""The profiler app's rules and report routes over a real ingest (a real GPU trace and SDK
records): the rules are the hub's, the report has every section, another user's job is not found."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from profilerhub_analysis.html_report import SECTIONS
from profilerhub_worker.ingest import IngestContext, ingest_job
from tests.support.jobs import make_job, open_app, sdk_files

GPU_TRACE = "traces/hta/tests/data/negative_queue_length_values_check/rank0.json.gz"


def test_the_app_serves_the_jobs_rules_and_report(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path
) -> None:
    files = sdk_files() | {"torch/rank0.json.gz": (shared_dir / GPU_TRACE).read_bytes()}
    job_id, _ = make_job(ctx, files)
    before = app_client.get(f"api/jobs/{job_id}/rules").json()
    assert before["status"] == "InProgress" and before["rules"] == []
    assert ingest_job(job_id, ctx) == "Ready"
    rules = app_client.get(f"api/jobs/{job_id}/rules").json()
    assert rules["final"] and rules["rules"][0]["rule"] == "ProfilerReport"
    children = {r["rule"]: r for r in rules["rules"][0]["rules"]}
    # no NVML samples, but GPU work in the trace: utilisation comes from the trace
    assert children["LowGPUUtilization"]["status"] != "Error"
    response = app_client.get(f"api/jobs/{job_id}/report", params={"download": 1})
    assert response.status_code == 200 and "attachment" in response.headers["content-disposition"]
    for key, _ in SECTIONS:
        assert f'<section id="{key}">' in response.text


def test_the_app_does_not_serve_another_users_rules_or_report(
    ctx: IngestContext, jobs_hub: Any, jobs_client: TestClient, jobs_seed: Any, tmp_path: Path
) -> None:
    jobs_seed.user("d1", "bob")
    job_id, _ = make_job(ctx, sdk_files(), user="bob")
    assert ingest_job(job_id, ctx) == "Ready"
    with open_app(ctx, jobs_hub, jobs_client, tmp_path / "store", "alice") as alice:
        for part in ("rules", "report"):
            response = alice.get(f"api/jobs/{job_id}/{part}")
            assert response.status_code == 404 and set(response.json()["error"]) == {"code", "message"}
