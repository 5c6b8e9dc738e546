"""End to end, the model rules on real CPU training through the SDK into the running stack
(hub, worker, beat with live rules every 5 s, webhooks to loopback): a healthy run on which every
tensor rule ends NoIssuesFound; runs built to trip VanishingGradient, ExplodingTensor (a NaN
loss from step 20), Overfit and Overtraining, and one MLP broken every way the other rules look
for (``model_training``'s ``broken``), each rule IssuesFound at a plausible step on the layer it
was built into; and, live, the vanishing
run opted in with ``stop_on=["VanishingGradient"]``: the worker's scan finds it while the run
goes on, the user's webhook gets the signed finding, and the run's next ``ph.step`` raises
``ph.StopTraining``; and a two-process gloo run opted in with ``stop_on=["ExplodingTensor"]``
whose rank 1 alone meets a NaN: both ranks raise ``ph.StopTraining`` (rank 1 at once, from its own
reductions; rank 0, whose series stay finite, from the hub reading rank 1's on its job), and the
user's webhook hears of the finding once, not once per rank."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from profilerhub_analysis.rules.model import TENSOR_RULES
from profilerhub_core.webhooks import SIGNATURE_HEADER, verify
from tests.e2e.jobs_stack import JobStack, _stop
from tests.e2e.model_training import SCRIPT
from tests.support.hub import auth
from tests.support.training import json_line, run_env, run_script
from tests.support.watchtrain import gloo_ranks
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.slow
HEALTHY_RULES = list(TENSOR_RULES)  # ClassImbalance too: the labels are the loss targets
BROKEN = [
    "LossNotDecreasing", "WeightUpdateRatio", "SaturatedActivation", "DeadRelu",
    "PoorWeightInitialization", "TensorVariance", "AllZero", "UnchangedTensor", "ClassImbalance",
]  # fmt: skip
"""The rules the ``broken`` scenario trips (with StalledTrainingRule, given a 2 s threshold)."""


@pytest.fixture(scope="module")
def model_stack(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[JobStack]:
    env = {
        "PROFILERHUB_RULES_SCAN_INTERVAL_SECONDS": "5",
        "PROFILERHUB_WEBHOOK_ALLOWED_NETWORKS": '["127.0.0.0/8"]',
        "PROFILERHUB_WEBHOOK_RETRY_BACKOFF_SECONDS": "0.5",
    }
    stack = JobStack.start(tmp_path_factory.mktemp("model"), redis_url, env=env)
    beat = stack._spawn("beat")
    try:
        yield stack
    finally:
        _stop(beat)
        stack.stop()


@pytest.fixture(scope="module")
def alice(model_stack: JobStack) -> str:
    return model_stack.user_token("ml", "alice")


def train(
    stack: JobStack, token: str, folder: Path, scenario: str, rules: list[Any], **env: str
) -> tuple[dict[str, Any], Any, str]:
    """Run the scenario's script against the hub; (the job's rules by name, STOPPED, output)."""
    environ = run_env(stack.url, token, SCENARIO=scenario, RULES=json.dumps(rules), STEPS="30", **env)
    status, output = run_script(folder, f"{scenario}.py", SCRIPT, environ, timeout=600)
    assert status == 0, output + stack.output()
    finish = json_line(output, "FINISHED ")
    # Everything reached the hub before ``complete``: a run that spilled its last steps (a slow
    # hub, a queue finish could not drain) would be judged without them.
    assert finish["spilled_files"] == {} and finish["dropped_files"] == {}, finish
    job_id = str(finish["location"]).rstrip("/").rsplit("/", 1)[-1]
    job = stack.wait_for_job(token, job_id)
    assert job["status"] == "Ready", job
    answer = httpx.get(f"{stack.url}/api/v1/domains/ml/users/alice/jobs/{job_id}/rules", headers=auth(token))
    results = answer.json()
    assert results["final"], results
    return {r["rule"]: r for r in results["rules"]}, json_line(output, "STOPPED "), output


def test_a_healthy_run_ends_no_issues_on_every_tensor_rule_and_three_broken_runs_trip_theirs(
    model_stack: JobStack, alice: str, tmp_path: Path
) -> None:
    scenarios: dict[str, list[Any]] = {
        "healthy": HEALTHY_RULES,
        "nan": ["ExplodingTensor", "VanishingGradient"],
        "overfit": ["Overfit", {"rule": "Overtraining", "parameters": {"patience_validation": 3}},
                    "VanishingGradient"],
        "broken": [*BROKEN, {"rule": "StalledTrainingRule", "parameters": {"threshold": 2}}],
    }  # fmt: skip
    token = alice
    with ThreadPoolExecutor(len(scenarios)) as pool:  # separate jobs: their CPU overlaps the stack's waits
        done = {
            name: pool.submit(train, model_stack, token, tmp_path, name, rules)
            for name, rules in scenarios.items()
        }
        runs = {name: future.result() for name, future in done.items()}
    healthy = runs["healthy"][0]
    assert {n: (r["status"], r["reason"]) for n, r in healthy.items() if r["status"] != "NoIssuesFound"} == {}
    assert sorted(healthy) == sorted(HEALTHY_RULES)
    overfit = runs["overfit"][0]["Overfit"]
    assert overfit["status"] == "IssuesFound" and overfit["findings"][0]["figures"]["ratio"] > 0.1, overfit
    assert overfit["findings"][0]["tensors"] == ["losses/loss"]
    nan = runs["nan"][0]
    exploding = nan["ExplodingTensor"]
    assert exploding["status"] == "IssuesFound" and exploding["reason"].startswith("at step 20:"), exploding
    assert any("losses/loss" in f["tensors"] for f in exploding["findings"]), exploding
    assert nan["VanishingGradient"]["status"] == "NoIssuesFound"  # NaN gradients are not small ones
    over = runs["overfit"][0]["Overtraining"]
    assert over["status"] == "IssuesFound" and over["findings"][0]["step_start"] < 10, over

    broken = runs["broken"][0]
    assert {n: r["status"] for n, r in broken.items()} == dict.fromkeys([*BROKEN, "StalledTrainingRule"],
                                                                        "IssuesFound")  # fmt: skip

    def found(rule: str) -> list[tuple[tuple[str, ...], int | None]]:
        """``(tensors, first step)`` of each of the rule's findings on the broken run."""
        return [(tuple(f.get("tensors") or ()), f.get("step_start")) for f in broken[rule]["findings"]]

    assert (("activations/3",), 0) in found("SaturatedActivation")  # the tanh after bias 5
    assert (("activations/1",), 0) in found("DeadRelu")  # the ReLU after bias -1e4
    assert (("activations/1",), 0) in found("AllZero")
    assert {t[0] for t, _ in found("UnchangedTensor")} == {"weights/0.weight", "weights/2.weight"}
    assert any(t[0] == "weights/0.weight" for t, _ in found("WeightUpdateRatio"))
    high = [f for f in broken["TensorVariance"]["findings"] if f["figures"].get("too") == "high"]
    assert [f["tensors"] for f in high] == [["weights/0.weight"]], broken["TensorVariance"]
    assert "activations/0" in found("PoorWeightInitialization")[0][0]
    assert found("LossNotDecreasing")[0][0] == ("losses/loss",)
    assert broken["ClassImbalance"]["findings"][0]["figures"]["largest_class"] == 0
    assert "no progress for" in broken["StalledTrainingRule"]["reason"], broken["StalledTrainingRule"]


def _webhook(stack: JobStack, token: str, receiver: WebhookReceiver, **body: Any) -> dict[str, Any]:
    """A webhook of alice's at ``receiver``."""
    hooks = f"{stack.url}/api/v1/domains/ml/users/alice/webhooks"
    made = httpx.post(hooks, json={"url": receiver.url, **body}, headers=auth(token))
    assert made.status_code == 201, made.text
    return dict(made.json())


def test_vanishing_gradients_found_live_post_a_signed_webhook_and_stop_the_opted_in_run(
    model_stack: JobStack, alice: str, tmp_path: Path
) -> None:
    stack, token = model_stack, alice
    with WebhookReceiver() as receiver:
        hook = _webhook(stack, token, receiver, events=["rule.IssuesFound"])
        rules, stopped, output = train(stack, token, tmp_path, "vanish", ["VanishingGradient"],
                                       STOP_ON='["VanishingGradient"]', GIVE_UP_S="300")  # fmt: skip
        assert isinstance(stopped, dict) and stopped["rule"] == "VanishingGradient", output + stack.output()
        (got,) = receiver.wait_for(1)
    assert verify(hook["secret"], got.body, got.headers[SIGNATURE_HEADER])
    body = json.loads(got.body)
    assert body["event"] == "rule.IssuesFound" and body["final"] is False  # found while it ran
    assert body["rule"]["rule"] == "VanishingGradient" and body["rule"]["reason"].startswith("at step 0:")
    first = body["rule"]["findings"][0]
    assert first["tensors"][0].startswith("gradients/0.") and first["figures"]["mean_abs_grad"] < 1e-7
    final = rules["VanishingGradient"]
    assert final["status"] == "IssuesFound" and final["findings"][0]["step_start"] == 0


def test_exploding_tensor_on_one_rank_of_a_gloo_run_stops_every_rank_and_posts_one_webhook(
    model_stack: JobStack, alice: str, tmp_path: Path
) -> None:
    stack, token = model_stack, alice
    user = f"{stack.url}/api/v1/domains/ml/users/alice"
    with WebhookReceiver() as receiver:
        hook = _webhook(stack, token, receiver)  # every event
        env = run_env(stack.url, token, JOB="ddp-stop", GIVE_UP_S="300")
        procs = gloo_ranks(Path(__file__).with_name("ddp_stop_script.py"), [], env, logs=tmp_path)
        codes = [p.wait(timeout=400) for p in procs]
        logs = [(tmp_path / f"rank{r}.log").read_text() for r in (0, 1)]
        assert codes == [0, 0], "\n".join(logs) + stack.output()
        stopped = [json_line(log, "STOPPED ") for log in logs]
        job_ids = [str(json_line(log, "FINISHED ")["location"]).rstrip("/").rsplit("/", 1)[-1]
                   for log in logs]  # fmt: skip
        ready = [stack.wait_for_job(token, job_id) for job_id in job_ids]
        # The rule's delivery, then each rank job's job.Ready (sent after its final rules' actions).
        got = [json.loads(r.body) for r in receiver.wait_for(3)]
    assert all(isinstance(s, dict) and s["rule"] == "ExplodingTensor" for s in stopped), logs
    assert stopped[1]["step"] == 6  # rank 1's NaN at step 5, seen by its own SDK: the next step
    assert stopped[0]["step"] > 6  # rank 0 went on until the hub's stop reached it
    assert [j["status"] for j in ready] == ["Ready", "Ready"]
    assert ready[0]["stop_request"]["rule"] == "ExplodingTensor", ready  # what stopped rank 0
    found = [b for b in got if b["event"] == "rule.IssuesFound"]
    assert len(found) == 1, got
    assert sorted(b["job"]["job_id"] for b in got if b["event"] == "job.Ready") == sorted(job_ids)
    rule = found[0]["rule"]
    assert rule["rule"] == "ExplodingTensor" and rule["ranks"] == [1], rule
    assert rule["reason"].startswith("at step 5:"), rule  # live or at rank 1's ingest, which comes first
    assert [j["job_id"] for j in found[0]["run"]["jobs"]] == job_ids
    for job_id in job_ids:  # each rank job's final rules: rank 1's NaN, found on both
        (exploding,) = httpx.get(f"{user}/jobs/{job_id}/rules", headers=auth(token)).json()["rules"]
        assert exploding["status"] == "IssuesFound", exploding
        assert {f["figures"]["rank"] for f in exploding["findings"]} == {1}, exploding
    log = httpx.get(f"{user}/webhooks/{hook['webhook_id']}/deliveries", headers=auth(token)).json()
    assert sorted(d["event"] for d in log["items"]) == ["job.Ready", "job.Ready", "rule.IssuesFound"], log
