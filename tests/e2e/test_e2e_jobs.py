"""End to end: a real PyTorch training loop instrumented with the SDK, against a running hub and
Celery worker (real processes, real Redis), ends as a Ready job whose summary has the steps, the
annotations, the metrics and the PyTorch trace's operators, served by the owner's profiler app."""

from __future__ import annotations

import httpx
import pytest

from profilerhub_analysis.timeline.binary import decode_window
from tests.e2e.jobs_stack import JobStack, wait_for_file
from tests.support.hub import auth, wait_for

pytestmark = pytest.mark.slow

STEPS = 12


def test_a_training_run_becomes_a_ready_job_with_its_summary(job_stack: JobStack) -> None:
    token = job_stack.user_token("ml", "alice")
    run = job_stack.train(token, STEPS)
    assert run.returncode == 0, run.output
    assert run.finish["completed"] is True and run.finish["dropped_files"] == {}, run.finish

    job = job_stack.wait_for_job(token, run.job_id)
    assert job["status"] == "Ready", job["failure_reason"]
    summary = job["summary"]
    assert summary["steps"]["count"] == STEPS
    assert {a["name"] for a in summary["annotations"]} >= {"forward", "backward"}
    assert summary["metrics"]["train:loss"]["count"] == STEPS
    assert summary["metrics"]["train:acc"]["last"] == pytest.approx(0.5 + (STEPS - 1) / 100)
    assert summary["system"]["metrics"]["cpu_percent"]["max"] >= 0
    (trace,) = summary["traces"]
    assert {"aten::linear", "aten::addmm"} <= {op["name"] for op in trace["ops"]}

    # The owner's profiler app (a spawned process, reached through the hub's proxy) serves it too.
    apps = f"{job_stack.url}/api/v1/domains/ml/users/alice/apps"
    created = httpx.post(apps, json={"app_type": "DetailedProfiler"}, headers=auth(token), timeout=30)
    assert created.status_code == 202, created.text
    app_id = created.json()["app_id"]

    def in_service() -> bool:
        return (
            httpx.get(f"{apps}/DetailedProfiler/default", headers=auth(token)).json()["status"] == "InService"
        )

    wait_for(in_service, "the profiler app InService", 180)
    listed = httpx.get(f"{job_stack.url}/apps/{app_id}/api/jobs", headers=auth(token), timeout=30)
    assert [(j["job_id"], j["status"]) for j in listed.json()["items"]] == [(run.job_id, "Ready")]
    full = httpx.get(f"{job_stack.url}/apps/{app_id}/api/jobs/{run.job_id}/summary", headers=auth(token))
    assert full.status_code == 200
    assert len(full.json()["steps"]["items"]) == STEPS
    assert len(full.json()["metrics"]["train:loss"]["series"]) == STEPS
    assert full.json()["traces"][0]["timeline"].startswith("processed/traces/")

    # Its dashboard and timeline, answered by the app process from what ingest wrote.
    base = f"{job_stack.url}/apps/{app_id}/api/jobs/{run.job_id}"
    dash = httpx.get(f"{base}/dashboard", headers=auth(token), timeout=60)
    assert dash.status_code == 200, dash.text
    panels = dash.json()["panels"]
    assert panels["cpu_active"]["active_us"] > 0 and panels["kernel_time"]["top"] == []
    assert panels["cpu_ops"][0]["name"] == trace["ops"][0]["name"]
    assert panels["metrics"]["train:loss"]["count"] == STEPS and panels["system"]["samples"] > 0
    lanes = httpx.get(f"{base}/timeline/lanes", headers=auth(token), timeout=60).json()
    # The trace's events, plus the SDK's annotations and steps on their own lanes.
    all_lanes = [lane for group in lanes["groups"] for lane in group["lanes"]]
    sdk_events = sum(lane["events"] for lane in all_lanes if lane["kind"] == "sdk_thread")
    assert sdk_events > 0, all_lanes
    assert lanes["events"] == full.json()["traces"][0]["report"]["x_events"] + sdk_events
    window = httpx.get(
        f"{base}/timeline/window", params={"start": 0, "end": lanes["t_end"], "px": 1000}, headers=auth(token)
    )
    assert window.status_code == 200, window.text
    header, _ = decode_window(window.content)
    assert sum(lane["events"] + lane["blocks"] for lane in header["lanes"]) > 0
    found = httpx.get(f"{base}/timeline/search", params={"q": "aten::addmm"}, headers=auth(token)).json()
    assert found["total"] > 0 and found["matches"][0]["name"] == "aten::addmm"


def test_training_survives_the_hub_going_away_and_uploads_when_it_returns(job_stack: JobStack) -> None:
    token = job_stack.user_token("ml", "bob")
    gate1, gate2 = job_stack.tmp / "half", job_stack.tmp / "late"

    def outage() -> None:
        wait_for_file(gate1.with_suffix(".reached"))
        job_stack.stop_hub()  # half-way: the hub is gone while training goes on
        gate1.with_suffix(".go").touch()
        wait_for_file(gate2.with_suffix(".reached"))
        job_stack.start_hub()  # ... and comes back before the end
        gate2.with_suffix(".go").touch()

    run = job_stack.train(token, 20, env={"GATES": f"8:{gate1},16:{gate2}"}, on_output=outage)
    assert run.returncode == 0, run.output
    assert "Traceback" not in run.output
    assert run.finish["completed"] is True, run.finish
    job = job_stack.wait_for_job(token, run.job_id, user="bob")
    assert job["status"] == "Ready", job["failure_reason"]
    assert job["summary"]["steps"]["count"] == 20
    assert job["summary"]["metrics"]["train:loss"]["count"] == 20


def test_training_finishes_and_spills_what_is_left_when_the_hub_never_returns(
    job_stack: JobStack,
) -> None:
    token = job_stack.user_token("ml", "carol")
    gate = job_stack.tmp / "gone"

    def outage() -> None:
        wait_for_file(gate.with_suffix(".reached"))
        job_stack.stop_hub()
        gate.with_suffix(".go").touch()

    try:
        run = job_stack.train(token, 10, env={"GATES": f"5:{gate}", "FLUSH": "3"}, on_output=outage)
    finally:
        job_stack.start_hub()  # the module's other tests share this hub
    assert run.returncode == 0, run.output
    assert "Traceback" not in run.output
    assert run.output.count("acc=") == 10  # every step ran
    assert run.finish["completed"] is False and run.finish["dropped_files"] == {}
    assert sum(run.finish["spilled_files"].values()) > 0 and run.finish["spilled_bytes"] > 0
    assert (
        str(job_stack.spill_dir) in run.finish["spill_dir"] and "profilerhub upload --spilled" in run.output
    )


def test_a_corrupt_upload_fails_its_job_through_the_worker_and_leaves_others_alone(
    job_stack: JobStack,
) -> None:
    import gzip
    import json

    token = job_stack.user_token("ml", "dave")
    jobs = f"{job_stack.url}/api/v1/domains/ml/users/dave/jobs"
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}
        ]
    }
    good = gzip.compress(json.dumps(trace).encode())
    ids = {}
    with httpx.Client(headers=auth(token), timeout=30) as http:
        for name, data in (("bad", good[: len(good) // 2]), ("good", good)):
            job_id = http.post(jobs, json={"name": name}).json()["job_id"]
            assert http.put(f"{jobs}/{job_id}/files/torch/t.json.gz", content=data).status_code == 201
            assert http.post(f"{jobs}/{job_id}/complete").status_code == 202
            ids[name] = job_id
    bad = job_stack.wait_for_job(token, ids["bad"], user="dave")
    assert bad["status"] == "Failed"
    assert bad["failure_reason"].startswith("raw/torch/t.json.gz: gzip data is truncated")
    good_job = job_stack.wait_for_job(token, ids["good"], user="dave")
    assert good_job["status"] == "Ready"
    assert good_job["summary"]["traces"][0]["ops"][0]["name"] == "aten::mm"
