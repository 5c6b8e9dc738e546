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


def _as_an_earlier_release_left_it(ctx: IngestContext, job_id: str, key: str) -> None:
    """Drop ``key`` from the job's first trace entry, as a job ingested before it existed."""
    ends = f"{job_id}/processed/summary.json"
    summary_key = next(k.key for k in ctx.store.list("") if k.key.endswith(ends))
    summary = json.loads(ctx.store.get(summary_key))
    del summary["traces"][0][key]
    ctx.store.put(summary_key, json.dumps(summary).encode())


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
    _as_an_earlier_release_left_it(ctx, job_id, "tb_views")
    answer = app_client.get(f"api/jobs/{job_id}/views")
    assert answer.status_code == 404
    assert "ingest the job again" in answer.json()["error"]["message"]
    assert app_client.get(f"api/jobs/{job_id}/views", params={"trace": 5}).status_code == 404
    assert app_client.get(f"api/jobs/{job_id}/views", params={"trace": "x"}).status_code == 400


def test_the_operators_view_over_a_time_range_counts_the_calls_starting_in_it(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path
) -> None:
    job_id = ingested_job(ctx, shared_dir, MLP)
    url = f"api/jobs/{job_id}/views/operators"
    cli = analyze_cli(shared_dir, MLP)
    whole = app_client.get(url)
    assert whole.status_code == 200, whole.text
    doc = whole.json()
    assert [r["name"] for r in doc["tb_operators"]] == [r["name"] for r in cli["tb_operators"]]
    assert [r["calls"] for r in doc["tb_operators"]] == [r["calls"] for r in cli["tb_operators"]]
    assert doc["calls"] == sum(r["calls"] for r in cli["tb_operators"])
    step = cli["tb_overview"]["steps"][0]  # its first half as the range: fewer calls
    t0, t1 = step["start_us"], (step["start_us"] + step["end_us"]) / 2
    half = app_client.get(url, params={"t0us": t0, "t1us": t1}).json()
    assert 0 < half["calls"] < doc["calls"]
    assert half["t0us"] == t0 and len(half["tb_operators_by_shape"]) >= len(half["tb_operators"])
    for bad in ({"t0us": "x"}, {"t0us": "nan"}, {"t0us": 5, "t1us": 5}, {"t1us": "inf"}):
        answer = app_client.get(url, params=bad)
        assert answer.status_code == 400, bad
        assert "t0us" in answer.json()["error"]["message"] or "t1us" in answer.json()["error"]["message"]
    old_id = ingested_job(ctx, shared_dir, MLP)  # one the app has not read yet
    _as_an_earlier_release_left_it(ctx, old_id, "tb_calls")
    old = app_client.get(f"api/jobs/{old_id}/views/operators")
    assert old.status_code == 404 and "ingest the job again" in old.json()["error"]["message"]
