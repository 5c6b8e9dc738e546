"""The profiler app's analysis API over real traces ingested as jobs: the dashboard's numbers are
``profilerhub analyze``'s, the timeline answers from what ingest wrote, compare and download work,
and bad input gets a 4xx with the one error shape."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from profilerhub_analysis.timeline.binary import decode_window
from profilerhub_analysis.timeline.bundle import OVERVIEW_PX
from profilerhub_worker.ingest import IngestContext, ingest_job
from tests.support.jobs import analyze_cli, ingested_job, make_job, sdk_files

GPU_TRACE = "traces/hta/tests/data/negative_queue_length_values_check/rank0.json.gz"
RANK_TRACES = ("traces/hta/tests/data/trace_filter/sampled_rank-0.json.gz",
               "traces/hta/tests/data/trace_filter/sampled_rank-1.json.gz")  # fmt: skip
BASE = "traces/hta/tests/data/trace_compare/base/base.json.gz"
TEST = "traces/hta/tests/data/trace_compare/test/test.json.gz"


def test_dashboard_numbers_are_those_of_profilerhub_analyze(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path
) -> None:
    job_id = ingested_job(ctx, shared_dir, GPU_TRACE)
    answer = app_client.get(f"api/jobs/{job_id}/dashboard", params={"top": 3})
    assert answer.status_code == 200, answer.text
    doc = answer.json()
    panels = doc["panels"]
    cli = analyze_cli(shared_dir, GPU_TRACE)
    assert doc["traces"] == [{"index": 0, "file": "torch/rank0.json.gz", "rank": cli["rank"]}]
    kt = panels["kernel_time"]
    assert [k["name"] for k in kt["top"]] == [k["name"] for k in cli["kernels"][:3]]
    assert kt["total_us"] == pytest.approx(cli["kernel_time_us"])
    assert kt["other"]["count"] + sum(k["count"] for k in kt["top"]) == cli["kernel_count"]
    assert len(panels["kernel_time_top15"]["top"]) == 15
    same = ("idle_breakdown", "queue_length", "comm_comp_overlap", "memory_bw", "launch_stats", "gpu_metrics",
            "temporal", "memory_ops", "precision", "steps", "launch_latency")  # fmt: skip
    for section in same:
        assert panels[section] == cli[section], section
    assert panels["gpu_active"]["active_us"] > 0 and panels["cpu_ops"]
    assert panels["step_time"]["count"] == len(cli["steps"])


def test_timeline_lanes_window_event_and_search_answer_from_the_ingested_index(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path
) -> None:
    job_id = ingested_job(ctx, shared_dir, GPU_TRACE)
    base = f"api/jobs/{job_id}/timeline"
    lanes = app_client.get(f"{base}/lanes").json()
    assert lanes["events"] == analyze_cli(shared_dir, GPU_TRACE)["x_events"]
    gpu = next(g for g in lanes["groups"] if g["kind"] == "gpu")
    stream = gpu["lanes"][0]["lane_id"]
    window = app_client.get(f"{base}/window", params={"start": 0, "end": lanes["t_end"], "px": 2000})
    assert window.status_code == 200 and window.headers["content-type"] == "application/x-profilerhub-window"
    header, cols = decode_window(window.content)
    assert {lane["lane_id"] for lane in header["lanes"]} >= {stream}
    assert len(cols["ct_mean"]) == sum(c["runs"] for c in header["counters"])
    one = app_client.get(f"{base}/window", params={"start": 0, "end": lanes["t_end"], "px": 500,
                                                   "lanes": str(stream), "counters": ""})  # fmt: skip
    one_header, _ = decode_window(one.content)
    assert [lane["lane_id"] for lane in one_header["lanes"]] == [stream] and one_header["counters"] == []
    overview = app_client.get(f"{base}/window", params={"overview": "1"})
    over_header, _ = decode_window(overview.content)
    assert (over_header["t0"], over_header["t1"], over_header["px"]) == (0, lanes["t_end"], OVERVIEW_PX)
    assert len(over_header["lanes"]) == sum(len(g["lanes"]) for g in lanes["groups"])

    found = app_client.get(f"{base}/search", params={"q": "ncclKernel", "limit": 5}).json()
    assert found["total"] > 5 and len(found["matches"]) == 5 and found["more"]
    starts = [m["start"] for m in found["matches"]]
    assert starts == sorted(starts)
    kernels = app_client.get(f"{base}/search", params={"q": "gemm", "limit": 50}).json()["matches"]
    details = [app_client.get(f"{base}/event/{m['id']}").json() for m in kernels]
    kernel = next(d for d in details if d["launch"] is not None)
    assert kernel["kind"] == "kernel" and kernel["launch"]["name"].startswith("cuda")
    launch = app_client.get(f"{base}/event/{kernel['launch']['id']}").json()
    assert kernel["id"] in [e["id"] for e in launch["launched"]]


def test_two_rank_job_has_a_rank_table_and_a_rank_selector(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path
) -> None:
    job_id = ingested_job(ctx, shared_dir, *RANK_TRACES)
    ranks = app_client.get(f"api/jobs/{job_id}/ranks").json()
    assert [r["index"] for r in ranks["ranks"]] == [0, 1]
    assert all(r["gpu_utilization_pct"] > 0 and r["communication_us"] > 0 for r in ranks["ranks"])
    assert "stragglers" in ranks["stragglers"]
    second = app_client.get(f"api/jobs/{job_id}/dashboard", params={"trace": 1}).json()
    assert second["trace"]["index"] == 1 and len(second["traces"]) == 2


def _place(ctx: IngestContext, job_id: str) -> Any:
    from profilerhub_core.db.models import Job
    from profilerhub_core.jobstorage import place_of

    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        assert job is not None
        return place_of(job)


def test_the_ranks_answer_is_the_join_s_file_with_the_all_ranks_overview(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path
) -> None:
    from profilerhub_analysis.build import load_trace
    from profilerhub_analysis.rank_activity import activity
    from profilerhub_core.storage.layout import RANKS, SUMMARY

    job_id = ingested_job(ctx, shared_dir, *RANK_TRACES)
    place = _place(ctx, job_id)
    stored = json.loads(ctx.store.get(place.processed_key(RANKS)))
    ranks = app_client.get(f"api/jobs/{job_id}/ranks").json()
    assert ranks == stored  # the app serves what the join wrote
    overview = ranks["overview"]
    assert [r["rank"] for r in overview["ranks"]] == [0, 1] and overview["basis"] == "gpu"
    # each rank's busy time over the grid is its trace's own GPU busy time (resampling keeps it)
    for row, trace in zip(overview["ranks"], RANK_TRACES, strict=True):
        act = activity(load_trace(shared_dir / trace))
        assert act is not None
        own = sum(act["busy_pct"]) * act["bucket_us"] / 100
        grid = sum(v for v in row["busy_pct"] if v is not None) * overview["column_us"] / 100
        assert grid == pytest.approx(own, rel=0.02)
    # the summary every page reads does not carry the activity buckets
    summary = json.loads(ctx.store.get(place.processed_key(SUMMARY)))
    assert all("activity" not in t for t in summary["traces"])


def test_a_job_ingested_before_the_ranks_file_still_has_its_rank_table(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path
) -> None:
    from profilerhub_core.storage.layout import RANKS

    job_id = ingested_job(ctx, shared_dir, *RANK_TRACES)
    ctx.store.delete(_place(ctx, job_id).processed_key(RANKS))
    ranks = app_client.get(f"api/jobs/{job_id}/ranks").json()
    assert [r["index"] for r in ranks["ranks"]] == [0, 1] and ranks["overview"] is None


def test_compare_two_jobs_gives_the_cli_compare(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path
) -> None:
    base, test = ingested_job(ctx, shared_dir, BASE), ingested_job(ctx, shared_dir, TEST)
    answer = app_client.get("api/compare", params={"base": base, "test": test})
    assert answer.status_code == 200, answer.text
    ops = {o["name"]: o for o in answer.json()["compare"]["ops"]}
    cli = Path(sys.executable).parent / "profilerhub"
    done = subprocess.run(
        [str(cli), "compare", str(shared_dir / BASE), str(shared_dir / TEST), "--format", "json"],
        capture_output=True,
        timeout=300,
    )
    expected = {o["name"]: o for o in json.loads(done.stdout)["compare"]["ops"]}
    assert ops == expected and ops["AddmmBackward0"]["change"] == "+"


def test_raw_trace_downloads_as_gzip_chrome_trace(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path
) -> None:
    job_id = ingested_job(ctx, shared_dir, BASE)
    answer = app_client.get(f"api/jobs/{job_id}/traces/0/raw")
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/gzip"
    assert "attachment" in answer.headers["content-disposition"]
    assert gzip.decompress(answer.content) == gzip.decompress((shared_dir / BASE).read_bytes())


@pytest.mark.parametrize(
    ("path", "params", "status"),
    [
        ("dashboard", {"top": "0"}, 400),
        ("dashboard", {"top": "ten"}, 400),
        ("dashboard", {"trace": "7"}, 404),
        ("timeline/window", {"start": "10", "end": "5", "px": "100"}, 400),
        ("timeline/window", {"start": "0", "end": "5", "px": "0"}, 400),
        ("timeline/window", {"start": "0", "end": "5"}, 400),
        ("timeline/window", {"start": "0", "end": "5", "px": "10", "lanes": "a,b"}, 400),
        ("timeline/search", {"q": ""}, 400),
        ("timeline/event/999999999", {}, 404),
        ("traces/3/raw", {}, 404),
    ],
)
def test_bad_input_gets_a_4xx_with_the_error_shape(
    ctx: IngestContext,
    app_client: TestClient,
    shared_dir: Path,
    path: str,
    params: dict[str, str],
    status: int,
) -> None:
    job_id = ingested_job(ctx, shared_dir, BASE)
    answer = app_client.get(f"api/jobs/{job_id}/{path}", params=params)
    assert answer.status_code == status, answer.text
    assert set(answer.json()["error"]) == {"code", "message"}


def test_another_users_job_is_not_found(
    ctx: IngestContext, jobs_seed: Any, app_client: TestClient, shared_dir: Path
) -> None:
    jobs_seed.user("d1", "bob")
    files = {"torch/base.json.gz": (shared_dir / BASE).read_bytes()}
    bobs, _ = make_job(ctx, files, user="bob")
    assert ingest_job(bobs, ctx) == "Ready"
    for path in ("dashboard", "timeline/lanes", "traces/0/raw"):
        assert app_client.get(f"api/jobs/{bobs}/{path}").status_code == 404
    assert app_client.get("api/compare", params={"base": bobs, "test": bobs}).status_code == 404


def test_an_sdk_job_without_profiler_steps_gets_its_step_time_and_annotation_histograms_from_the_sdk(
    ctx: IngestContext, app_client: TestClient
) -> None:
    job_id, _ = make_job(ctx, sdk_files(steps=4))
    assert ingest_job(job_id, ctx) == "Ready"
    doc = app_client.get(f"api/jobs/{job_id}/dashboard").json()
    assert doc["trace"] is None and doc["traces"] == []
    panels = doc["panels"]
    assert panels["step_time"]["count"] == 4 and panels["step_time"]["source"] == "sdk"
    assert sum(panels["step_time"]["histogram"]["counts"]) == 4
    forward = next(a for a in panels["annotations"]["names"] if a["name"] == "forward")
    assert forward["source"] == "sdk" and sum(panels["annotations"]["histograms"]["forward"]["counts"]) == 4
    assert panels["metrics"]["train:loss"]["count"] == 4 and panels["kernel_time"]["top"] == []


def test_a_running_job_shows_what_it_has_streamed_so_far(ctx: IngestContext, app_client: TestClient) -> None:
    job_id, _ = make_job(ctx, sdk_files(steps=3), complete=False)
    first = app_client.get(f"api/jobs/{job_id}/live")
    assert first.status_code == 200, first.text
    doc = first.json()
    assert doc["status"] == "InProgress" and doc["steps"]["count"] == 3
    assert doc["metrics"]["train:loss"]["count"] == 3 and doc["system"]["samples"] > 0
    assert {a["name"] for a in doc["annotations"]} == {"forward", "backward"}
    # the panels the streamed records make, as the dashboard of the Ready job will have them
    assert doc["panels"]["step_time"]["count"] == 3 and doc["panels"]["step_time"]["source"] == "sdk"
    assert sum(doc["panels"]["annotations"]["histograms"]["forward"]["counts"]) == 3
    assert app_client.get(f"api/jobs/{job_id}/dashboard").status_code == 404  # not Ready

    # the same numbers as the summary ingest writes once the run completes
    done, _ = make_job(ctx, sdk_files(steps=3))
    assert ingest_job(done, ctx) == "Ready"
    live = app_client.get(f"api/jobs/{done}/live").json()
    summary = app_client.get(f"api/jobs/{done}/summary").json()
    for key in ("steps", "annotations", "metrics", "system"):
        assert live[key] == summary[key], key
    panels = app_client.get(f"api/jobs/{done}/dashboard").json()["panels"]
    for key in ("step_time", "annotations"):
        assert live["panels"][key] == panels[key], key


def test_the_app_maps_the_ingested_timeline_in_place_without_a_copy(
    ctx: IngestContext, app_client: TestClient, shared_dir: Path, tmp_path: Path
) -> None:
    job_id = ingested_job(ctx, shared_dir, BASE)
    for _ in range(2):
        assert app_client.get(f"api/jobs/{job_id}/timeline/lanes").status_code == 200
    assert not (tmp_path / "app-cache-alice").exists()
