"""End to end, a training job seen and steered from boto3: a real PyTorch CPU run instrumented with
the SDK (metric definitions, printed lines, system samples) against ``profilerhub hub``, ``worker``
and ``beat`` processes on a real Redis. While it runs, its metrics are CloudWatch's answer (equal
to the REST metrics API) and a capture asked with ``update_training_job`` yields one more trace of
exactly its steps; ``stop_training_job`` ends the script's loop with ``ph.StopTraining`` and the job
ends ``Stopped``, its final metrics the last values logged, its rule statuses present, its printed
lines readable in order through CloudWatch Logs; the AWS CLI, pointed at the hub by the
service-specific endpoint variables alone, reads the same; another user's key sees none of it."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from botocore.config import Config

from tests.e2e.jobs_stack import JobStack, _stop
from tests.support.hub import auth, wait_for
from tests.support.sagemaker import check_output
from tests.support.training import clean_env, cpu_training_script, json_line, run_env

pytestmark = pytest.mark.slow

SCRIPT = cpu_training_script(
    'job="bert-ft", sample_interval_s=0.1, chunk_interval_s=1.0, flush_timeout_s=60, '
    'metric_definitions=[{"Name": "train:acc", "Regex": "acc=([0-9.]+)"}]',
    after_step="""\
    ph.log_metric("train:loss", loss.item(), step=i)
    print(f"step {i} acc={0.5 + i / 100000:.5f} loss={loss.item()!r}", flush=True)
    """,
    pause_s=0.01,
)
NAMESPACE, GROUP = "/aws/sagemaker/TrainingJobs", "/aws/sagemaker/TrainingJobs"
CAPTURE_STEPS = 3


@pytest.fixture
def stack(tmp_path: Path, redis_url: str) -> Iterator[JobStack]:
    """Hub + worker + beat, the live rules scanning running jobs every 5 s (the least)."""
    stack = JobStack.start(tmp_path, redis_url, env={"PROFILERHUB_RULES_SCAN_INTERVAL_SECONDS": "5"})
    beat = stack._spawn("beat")
    try:
        yield stack
    finally:
        _stop(beat)
        stack.stop()


def _keys(stack: JobStack, user: str) -> dict[str, str]:
    token = stack.user_token("ml", user)
    answer = httpx.post(
        f"{stack.url}/api/v1/domains/ml/users/{user}/access-keys", json={}, headers=auth(token)
    )
    answer.raise_for_status()
    return {
        "token": token,
        "id": answer.json()["access_key_id"],
        "secret": answer.json()["secret_access_key"],
    }


def _client(stack: JobStack, service: str, keys: dict[str, str], path: str) -> Any:
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=f"{stack.url}/{path}",
        region_name="us-east-1",
        aws_access_key_id=keys["id"],
        aws_secret_access_key=keys["secret"],
        config=Config(retries={"max_attempts": 1}),
    )


def _window() -> tuple[int, int]:
    """From 20 minutes ago to a minute from now, in whole seconds (boto3 sends StartTime with its
    fraction, and CloudWatch's periods start at StartTime)."""
    now = int(datetime.now(UTC).timestamp())
    return now - 1200, now + 60


def _loss_points(cw: Any, job: str, window: tuple[int, int]) -> list[dict[str, Any]]:
    answer = cw.get_metric_statistics(
        Namespace=NAMESPACE, MetricName="train:loss", Dimensions=[{"Name": "Host", "Value": f"{job}/algo-1"}],
        StartTime=datetime.fromtimestamp(window[0], UTC), EndTime=datetime.fromtimestamp(window[1], UTC),
        Period=60, Statistics=["Average", "SampleCount", "Maximum"],
    )  # fmt: skip
    return list(check_output(cw, "GetMetricStatistics", answer)["Datapoints"])


def _rest_loss(stack: JobStack, token: str, job_id: str, window: tuple[int, int]) -> dict[float, float]:
    params = {"name": "train:loss", "stat": "SampleCount", "period": 60, "start": window[0] * 10**9,
              "end": window[1] * 10**9}  # fmt: skip
    answer = httpx.get(f"{stack.url}/api/v1/domains/ml/users/alice/jobs/{job_id}/metrics", params=params,
                       headers=auth(token))  # fmt: skip
    answer.raise_for_status()
    return {d["Timestamp_ns"] / 1e9: d["SampleCount"] for d in answer.json()["datapoints"]}


def _same_as_rest(stack: JobStack, token: str, job_id: str, cw: Any, final: bool) -> list[dict[str, Any]]:
    """CloudWatch's periods are the REST API's (the points). While the job runs the live cache may
    move on between the two reads, so then only the periods before the newest are compared."""
    window = _window()
    points = _loss_points(cw, "bert-ft", window)
    rest = _rest_loss(stack, token, job_id, window)
    got = {p["Timestamp"].timestamp(): p["SampleCount"] for p in points}
    if final:
        assert got == rest
    else:
        older = sorted(set(got) & set(rest))[:-1]
        assert all(got[t] == rest[t] for t in older), (got, rest)
    return points


def test_a_training_job_watched_captured_stopped_and_read_back_through_boto3_and_the_aws_cli(
    stack: JobStack, tmp_path: Path
) -> None:
    alice, bob = _keys(stack, "alice"), _keys(stack, "bob")
    sm = _client(stack, "sagemaker", alice, "sagemaker")
    cw = _client(stack, "cloudwatch", alice, "cloudwatch")
    logs = _client(stack, "logs", alice, "logs")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = run_env(stack.url, alice["token"], GIVE_UP_S="180", PROFILERHUB_SPILL_DIR=str(stack.spill_dir))
    child = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, cwd=tmp_path)  # fmt: skip
    try:
        listed: list[dict[str, Any]] = []

        def registered() -> bool:
            listed[:] = sm.list_training_jobs(StatusEquals="InProgress")["TrainingJobSummaries"]
            return bool(listed)

        wait_for(registered, "the run's job InProgress", 120, 0.2)
        job_id = listed[0]["TrainingJobArn"].rsplit("/", 1)[1]
        running = lambda: bool(_loss_points(cw, "bert-ft", _window()))  # noqa: E731
        wait_for(running, "train:loss in CloudWatch while it runs", 120, 0.3)
        _same_as_rest(stack, alice["token"], job_id, cw, final=False)
        assert sm.describe_training_job(TrainingJobName="bert-ft")["SecondaryStatus"] == "Training"

        detailed = {"DetailedProfilingConfig": json.dumps({"NumSteps": CAPTURE_STEPS})}
        sm.update_training_job(TrainingJobName="bert-ft", ProfilerConfig={"ProfilingParameters": detailed})
        raw = Path(stack.env["PROFILERHUB_HOME"]) / "storage"
        traces: list[Path] = []

        def captured() -> bool:
            traces[:] = sorted(raw.glob(f"**/{job_id}/raw/torch/*.capture-*.pt.trace.json.gz"))
            return bool(traces)

        wait_for(captured, "the capture's trace uploaded", 120, 0.2)
        check_output(sm, "StopTrainingJob", sm.stop_training_job(TrainingJobName="bert-ft"))
        out, _ = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    text = out.decode(errors="replace")
    (tmp_path / "train.out").write_text(text)
    assert child.returncode == 0, text
    stopped = json_line(text, "STOPPED ")
    assert stopped["rule"] == "StopTrainingJob", text
    printed = [line for line in text.splitlines() if line.startswith("step ")]

    events = json.loads(gzip.decompress(traces[0].read_bytes()))["traceEvents"]
    steps = {e["name"] for e in events if str(e.get("name", "")).startswith("ProfilerStep#")}
    assert len(steps) == CAPTURE_STEPS, sorted(steps)

    job = stack.wait_for_job(alice["token"], job_id)
    assert job["status"] == "Ready" and job["stop_request"]["by"] == "user"
    described = check_output(sm, "DescribeTrainingJob", sm.describe_training_job(TrainingJobName="bert-ft"))
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Stopped", "Stopped")
    finals = {m["MetricName"]: m["Value"] for m in described["FinalMetricDataList"]}
    last = printed[-1].split()
    assert finals["train:loss"] == float(last[3].split("=")[1])
    assert finals["train:acc"] == float(last[2].split("=")[1])
    assert described["ProfilerRuleEvaluationStatuses"][0]["RuleEvaluationStatus"] in (
        "NoIssuesFound", "IssuesFound", "Error",
    )  # fmt: skip
    after = _same_as_rest(stack, alice["token"], job_id, cw, final=True)
    host = [{"Name": "Host", "Value": "bert-ft/algo-1"}]  # RANK unset: rank 0's instance
    names = {
        m["MetricName"] for m in check_output(cw, "ListMetrics", cw.list_metrics(Dimensions=host))["Metrics"]
    }
    assert {"train:loss", "train:acc", "CPUUtilization", "MemoryUtilization", "DiskUtilization"} <= names
    assert sum(p["SampleCount"] for p in after) == len(printed)

    stream = logs.describe_log_streams(logGroupName=GROUP)["logStreams"][0]["logStreamName"]
    lines = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, startFromHead=True)["events"]
    messages = [e["message"] for e in lines if e["message"].startswith("step ")]
    assert messages == printed  # every printed line, in order

    for client, call in (
        (
            _client(stack, "sagemaker", bob, "sagemaker"),
            lambda c: c.list_training_jobs()["TrainingJobSummaries"],
        ),
        (_client(stack, "cloudwatch", bob, "cloudwatch"), lambda c: c.list_metrics()["Metrics"]),
        (
            _client(stack, "logs", bob, "logs"),
            lambda c: c.describe_log_streams(logGroupName=GROUP)["logStreams"],
        ),
    ):
        assert call(client) == []

    aws = Path(sys.executable).with_name("aws")
    cli_env = clean_env() | {
        "AWS_ACCESS_KEY_ID": alice["id"], "AWS_SECRET_ACCESS_KEY": alice["secret"],
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_ENDPOINT_URL_SAGEMAKER": f"{stack.url}/sagemaker",
        "AWS_ENDPOINT_URL_CLOUDWATCH": f"{stack.url}/cloudwatch",
        "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": f"{stack.url}/logs",  # botocore's name for the logs client
    }  # fmt: skip

    def cli(*args: str) -> Any:
        done = subprocess.run([str(aws), *args, "--output", "json"], env=cli_env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert (
        cli("sagemaker", "describe-training-job", "--training-job-name", "bert-ft")["TrainingJobStatus"]
        == "Stopped"
    )
    now = datetime.now(UTC)
    points = cli("cloudwatch", "get-metric-statistics", "--namespace", NAMESPACE,
                 "--metric-name", "train:loss", "--dimensions", "Name=Host,Value=bert-ft/algo-1",
                 "--statistics", "SampleCount",
                 "--start-time", (now - timedelta(minutes=20)).isoformat(), "--end-time", now.isoformat(),
                 "--period", "60")["Datapoints"]  # fmt: skip
    assert sum(p["SampleCount"] for p in points) == len(printed)
    read = cli(
        "logs", "get-log-events", "--log-group-name", GROUP, "--log-stream-name", stream, "--start-from-head"
    )
    assert [e["message"] for e in read["events"] if e["message"].startswith("step ")] == printed
