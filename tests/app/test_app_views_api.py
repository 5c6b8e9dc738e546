"""The TensorBoard plugin's views in the profiler app: computed once at ingest from real traces and
answered as ``profilerhub analyze`` prints them; a trace ingested without them says what to do."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from profilerhub_analysis.tbviews import SECTIONS
from profilerhub_worker.ingest import IngestContext
from tests.support.jobs import analyze_cli, ingested_job

MLP = "traces/torch-cpu/mlp_cpu_10steps.pt.trace.json"  # memory records and input shapes
GPU = "traces/hta/tests/data/trace_compare/test/test.json.gz"


def test_the_views_of_each_trace_are_those_of_profilerhub_analyze(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path
) -> None:
    job_id = ingested_job(ctx, shared_dir, MLP, GPU)
    for index, trace in enumerate((MLP, GPU)):
        answer = app_client.get(f"api/jobs/{job_id}/views", params={"trace": index})
        assert answer.status_code == 200, answer.text
        doc = answer.json()
        assert doc["trace"] == index and [t["index"] for t in doc["traces"]] == [0, 1]
        cli = analyze_cli(shared_dir, trace)
        for section in SECTIONS:
            assert doc["views"][section] == cli[section], (trace, section)
        assert isinstance(doc["recommendations"], list)
    mlp = app_client.get(f"api/jobs/{job_id}/views").json()["views"]
    assert mlp["tb_memory"] and any(r["input_shape"] for r in mlp["tb_operators_by_shape"])


def test_a_trace_ingested_before_the_views_existed_answers_404_saying_what_to_do(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path
) -> None:
    job_id = ingested_job(ctx, shared_dir, GPU)
    summary_key = next(
        k.key for k in ctx.store.list("") if k.key.endswith(f"{job_id}/processed/summary.json")
    )
    summary = json.loads(ctx.store.get(summary_key))
    del summary["traces"][0]["tb_views"]  # as a job ingested by an earlier release
    ctx.store.put(summary_key, json.dumps(summary).encode())
    answer = app_client.get(f"api/jobs/{job_id}/views")
    assert answer.status_code == 404
    assert "ingest the job again" in answer.json()["error"]["message"]
    assert app_client.get(f"api/jobs/{job_id}/views", params={"trace": 5}).status_code == 404
    assert app_client.get(f"api/jobs/{job_id}/views", params={"trace": "x"}).status_code == 400
