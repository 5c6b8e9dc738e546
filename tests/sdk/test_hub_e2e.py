"""End to end: a real training loop with the SDK against a real ``profilerhub up``.

The job is registered, its files go up through the hub's job routes, ``complete`` sends the
ingest task to the worker, and the job ends ``Ready`` with a summary built from what the SDK wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import httpx
import pytest

import profilerhub as ph
from profilerhub.hubclient import HubJob
from profilerhub.sinks.hub import HubSink
from tests.support.hub import STACK_HUB_WORKERS, auth, wait_for

from .training import ANNOTATIONS, PRINTED_LOSS, train


@pytest.mark.slow
def test_profiled_training_run_ends_ready_on_the_hub_with_its_summary(
    torch: ModuleType, hub_process: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = hub_process("up", env={"PROFILERHUB_HUB_WORKERS": STACK_HUB_WORKERS})
    api, admin = f"{hub.url}/api/v1", auth(hub.admin_token())
    for path, body in (("domains", {"name": "research"}), ("domains/research/users", {"name": "alice"})):
        assert httpx.post(f"{api}/{path}", json=body, headers=admin).status_code == 201
    made = httpx.post(f"{api}/domains/research/users/alice/tokens", json={"note": "sdk"}, headers=admin)
    token = made.json()["token"]
    monkeypatch.setenv("PROFILERHUB_URL", hub.url)
    monkeypatch.setenv("PROFILERHUB_TOKEN", token)

    ph.init(
        job="e2e-mlp",
        chunk_interval_s=0.2,
        metric_definitions=[PRINTED_LOSS],
        torch_profiler={"wait": 1, "warmup": 1, "active": 2},
        rules=["StepOutlier", {"rule": "Dataloader", "parameters": {"fetch_threshold": 90}}],
    )
    train(torch, 6)
    summary = ph.finish(timeout=30)
    assert summary["completed"], summary
    assert "profilerhub apps start" in summary["where_to_look"]  # no app is running yet

    job_url = summary["location"]
    job: dict[str, Any] = {}

    def finished() -> bool:
        job.update(httpx.get(job_url, headers=auth(token)).json())
        return job["status"] in ("Ready", "Failed")

    wait_for(finished, "the job to be ingested", timeout=120)
    assert job["status"] == "Ready", job.get("failure_reason")
    assert job["metric_definitions"] == [PRINTED_LOSS]
    got = job["summary"]
    assert got["job"]["name"] == "e2e-mlp" and got["job"]["sdk_dropped"]["files"] == {}
    assert got["steps"]["count"] == 6
    assert {a["name"]: a["count"] for a in got["annotations"]} == {
        **dict.fromkeys(ANNOTATIONS, 6),
        "evaluate": 1,
    }
    assert {name: m["count"] for name, m in got["metrics"].items()} == {
        "train:loss": 6,
        "train:printed_loss": 6,
    }
    assert got["system"]["samples"] > 0
    (trace,) = got["traces"]
    assert "aten::addmm" in {op["name"] for op in trace["ops"]}
    rules = httpx.get(f"{job_url}/rules", headers=auth(token)).json()
    assert rules["final"] and [c["rule"] for c in rules["configured"]] == ["StepOutlier", "Dataloader"]
    assert rules["rules"][1]["parameters"]["fetch_threshold"] == 90
    assert {r["status"] for r in rules["rules"]} <= {"NoIssuesFound", "IssuesFound", "Error"}

    # With her profiler app running, the run's end names the job's page in it.
    app = httpx.post(f"{api}/domains/research/users/alice/apps", json={}, headers=auth(token)).json()
    one_app = f"{api}/domains/research/users/alice/apps/DetailedProfiler/default"
    wait_for(lambda: httpx.get(one_app, headers=auth(token)).json()["status"] == "InService", "the app", 120)
    sink = HubSink(hub.url, token, "e2e-mlp")
    sink.job = HubJob("research", "alice", job["job_id"], "e2e-mlp", "hub")
    page = f"{hub.url}/apps/{app['app_id']}/jobs/{job['job_id']}"
    assert sink.where_to_look() == f"open it in your profiler app: {page}"
