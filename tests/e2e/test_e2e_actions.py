"""End to end, the actions on a rule's finding: a real PyTorch CPU run instrumented with the SDK
stalls its data loader once; the live rules (the worker, driven by beat every 5 s) catch it as
Dataloader IssuesFound while the run goes on; the user's webhook reaches a real HTTP server with a
valid signature (its first answer, a 500, is retried by Celery with backoff); and because the run
opted in with ``stop_on=["Dataloader"]``, its next ``ph.step`` raises ``ph.StopTraining`` and the
loop ends cleanly, the job Ready, the stop request on it and in the audit log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from profilerhub_core.webhooks import SIGNATURE_HEADER, verify
from tests.e2e.jobs_stack import JobStack, _stop
from tests.support.hub import auth
from tests.support.training import cpu_training_script, json_line, run_env, run_script
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.slow

STALL_SCRIPT = cpu_training_script(
    'job="stalled-loader", sample_interval_s=0.1, chunk_interval_s=0.5, rules=["Dataloader"], '
    'stop_on=["Dataloader"]',
    step="""\
    with ph.annotate("dataloader"):
        if i == 50:
            time.sleep(0.4)  # the injected stall: one fetch of 400 ms
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    with ph.annotate("forward"):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    with ph.annotate("backward"):
        opt.zero_grad()
        loss.backward()
        opt.step()
    """,
    hidden=256,
)


@pytest.fixture
def action_stack(tmp_path: Path, redis_url: str) -> Iterator[JobStack]:
    """Hub + worker + beat: live rules every 5 s, webhooks allowed to loopback, quick retries."""
    env = {
        "PROFILERHUB_RULES_SCAN_INTERVAL_SECONDS": "5",
        "PROFILERHUB_WEBHOOK_ALLOWED_NETWORKS": '["127.0.0.0/8"]',
        "PROFILERHUB_WEBHOOK_RETRY_BACKOFF_SECONDS": "0.5",
    }
    stack = JobStack.start(tmp_path, redis_url, env=env)
    beat = stack._spawn("beat")
    try:
        yield stack
    finally:
        _stop(beat)
        stack.stop()


def test_a_live_dataloader_stall_posts_a_signed_webhook_and_stops_the_opted_in_run(
    action_stack: JobStack, tmp_path: Path
) -> None:
    stack = action_stack
    token = stack.user_token("ml", "alice")
    hooks = f"{stack.url}/api/v1/domains/ml/users/alice/webhooks"
    with WebhookReceiver(statuses=[500]) as receiver:
        made = httpx.post(
            hooks, json={"url": receiver.url, "events": ["rule.IssuesFound"]}, headers=auth(token)
        )
        assert made.status_code == 201, made.text
        hook = made.json()

        env = run_env(stack.url, token, GIVE_UP_S="200")
        status, output = run_script(tmp_path, "stall.py", STALL_SCRIPT, env, timeout=300)
        assert status == 0, output + stack.output()
        stopped = json_line(output, "STOPPED ")
        assert isinstance(stopped, dict) and stopped["rule"] == "Dataloader", output + stack.output()
        assert stopped["step"] > 50  # after the stall, at a step boundary
        finish = json_line(output, "FINISHED ")
        assert isinstance(finish, dict) and finish["completed"] is True, finish

        got = receiver.wait_for(2)  # the 500, then Celery's retry
    first, retry = got[0], got[1]
    assert (
        first.body == retry.body
        and first.headers["X-ProfilerHub-Delivery"] == retry.headers["X-ProfilerHub-Delivery"]
    )
    for request in (first, retry):
        assert verify(hook["secret"], request.body, request.headers[SIGNATURE_HEADER])
    body = json.loads(retry.body)
    assert body["event"] == "rule.IssuesFound" and body["final"] is False  # found live
    assert body["rule"]["rule"] == "Dataloader"
    assert any(f["message"].startswith("a data fetch took") for f in body["rule"]["findings"]), body

    job_id = str(finish["location"]).rstrip("/").rsplit("/", 1)[-1]
    job = stack.wait_for_job(token, job_id)
    assert job["status"] == "Ready" and job["stop_on"] == ["Dataloader"]
    assert job["stop_request"]["rule"] == "Dataloader"
    log = httpx.get(f"{hooks}/{hook['webhook_id']}/deliveries", headers=auth(token)).json()["items"]
    (delivery,) = log
    assert delivery["status"] == "Delivered" and [a["status_code"] for a in delivery["attempts"]] == [
        500,
        200,
    ]
    audit = httpx.get(
        f"{stack.url}/api/v1/audit", params={"action": "RequestStopTraining"}, headers=stack.admin()
    ).json()["items"]
    assert [(e["target"], e["detail"]["rule"]) for e in audit] == [(job_id, "Dataloader")]
