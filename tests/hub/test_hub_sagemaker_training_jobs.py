"""Jobs as SageMaker training jobs through boto3's own ``sagemaker`` client, over real HTTP.

Real parts: uvicorn on a loopback port, botocore's signer and parsers, the database (SQLite and
PostgreSQL), ingest and the live rules scan run as the worker's own functions on the hub's store.
Every answer is checked against botocore's output shape (``check_output``).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from profilerhub_core.db.models import Job
from profilerhub_core.jobstorage import place_of
from profilerhub_worker.ingest import IngestContext, ingest_job
from profilerhub_worker.ingest.live_rules import evaluate_live
from tests.support.hub import auth
from tests.support.jobs import sdk_files
from tests.support.sagemaker import aws_client, check_output, issue_key

JOBS = "/api/v1/domains/d1/users/alice/jobs"
DEFINITIONS = [{"Name": "train:acc", "Regex": "acc=([0-9.]+)"}]


def _ctx(hub: Any) -> IngestContext:
    return IngestContext(sessions=hub.state.services.sessions, store=hub.state.services.storage,
                         max_file_bytes=4 << 20, max_trace_bytes=64 << 20,
                         stale_after=timedelta(minutes=5))  # fmt: skip


def _job(client: Any, token: str, name: str = "bert-ft", **body: Any) -> str:
    answer = client.post(JOBS, json={"name": name, **body}, headers=auth(token))
    assert answer.status_code == 201, answer.text
    return str(answer.json()["job_id"])


def _upload(hub: Any, job_id: str, files: dict[str, bytes]) -> None:
    store = hub.state.services.storage
    with hub.state.services.sessions() as session:
        place = place_of(session.get(Job, job_id))
    for name, data in files.items():
        store.put(place.raw_key(name), data)


def _ready(client: Any, hub: Any, token: str, job_id: str) -> None:
    _upload(hub, job_id, sdk_files(steps=6))
    assert client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
    assert ingest_job(job_id, _ctx(hub)) == "Ready"


@pytest.fixture
def alice(jobs_door: Any, jobs_client: Any, jobs_seed: Any) -> tuple[str, Any]:
    token = jobs_seed.user_token("d1", "alice")
    return token, aws_client("sagemaker", jobs_door, issue_key(jobs_client, token, "d1", "alice"))


def test_a_ready_job_described_as_a_completed_training_job_with_final_metrics_and_rule_statuses(
    jobs_door: Any, jobs_client: Any, alice: tuple[str, Any]
) -> None:
    token, sm = alice
    job_id = _job(jobs_client, token, metric_definitions=DEFINITIONS)
    _ready(jobs_client, jobs_door, token, job_id)
    by_name = check_output(sm, "DescribeTrainingJob", sm.describe_training_job(TrainingJobName="bert-ft"))
    by_id = check_output(sm, "DescribeTrainingJob", sm.describe_training_job(TrainingJobName=job_id))
    assert by_name["TrainingJobArn"] == by_id["TrainingJobArn"]
    assert by_name["TrainingJobArn"] == f"arn:aws:sagemaker:us-east-1:000000000000:training-job/{job_id}"
    assert (by_name["TrainingJobStatus"], by_name["SecondaryStatus"]) == ("Completed", "Completed")
    moves = [t["Status"] for t in by_name["SecondaryStatusTransitions"]]
    assert moves[0] == "Training" and moves[-1] == "Completed" and "Uploading" in moves

    rest = jobs_client.get(f"{JOBS}/{job_id}/metrics", headers=auth(token)).json()
    finals = {m["MetricName"]: m["Value"] for m in by_name["FinalMetricDataList"]}
    assert finals == {"train:loss": 2.0 / 6}  # the last logged value; train:acc was only NaN
    assert finals["train:loss"] == next(
        m["Value"] for m in rest["FinalMetricDataList"] if m["MetricName"] == "train:loss"
    )
    names = [d["Name"] for d in by_name["AlgorithmSpecification"]["MetricDefinitions"]]
    assert names[0] == "train:acc" and set(names) == {"train:acc", "train:loss"}
    statuses = {s["RuleConfigurationName"]: s for s in by_name["ProfilerRuleEvaluationStatuses"]}
    assert set(statuses) == {"ProfilerReport"}
    assert statuses["ProfilerReport"]["RuleEvaluationStatus"] in ("NoIssuesFound", "IssuesFound", "Error")
    assert "LastModifiedTime" in statuses["ProfilerReport"]
    assert by_name["ProfilingStatus"] == "Enabled" and "DebugRuleEvaluationStatuses" not in by_name


def test_list_training_jobs_filters_sorts_and_pages_and_another_users_key_sees_nothing(
    jobs_door: Any, jobs_client: Any, jobs_seed: Any, alice: tuple[str, Any]
) -> None:
    token, sm = alice
    ids = [_job(jobs_client, token, name=f"run-{i}") for i in range(5)]
    _ready(jobs_client, jobs_door, token, ids[0])
    pages = list(
        sm.get_paginator("list_training_jobs").paginate(
            SortBy="CreationTime", SortOrder="Ascending", PaginationConfig={"PageSize": 2}
        )
    )
    assert [len(check_output(sm, "ListTrainingJobs", p)["TrainingJobSummaries"]) for p in pages] == [2, 2, 1]
    arns = [s["TrainingJobArn"] for p in pages for s in p["TrainingJobSummaries"]]
    assert [a.rsplit("/", 1)[1] for a in arns] == ids
    running = sm.list_training_jobs(StatusEquals="InProgress", SortBy="Name", SortOrder="Descending")
    assert [s["TrainingJobName"] for s in running["TrainingJobSummaries"]] == [
        "run-4",
        "run-3",
        "run-2",
        "run-1",
    ]
    done = check_output(sm, "ListTrainingJobs", sm.list_training_jobs(StatusEquals="Completed"))
    assert [s["TrainingJobName"] for s in done["TrainingJobSummaries"]] == ["run-0"]
    assert [
        s["TrainingJobName"] for s in sm.list_training_jobs(NameContains="RUN-3")["TrainingJobSummaries"]
    ] == ["run-3"]
    first = sm.describe_training_job(TrainingJobName=ids[0])["CreationTime"]
    later = sm.list_training_jobs(CreationTimeAfter=first, SortOrder="Ascending")["TrainingJobSummaries"]
    assert [s["TrainingJobName"] for s in later] == ["run-1", "run-2", "run-3", "run-4"]

    bob_token = jobs_seed.user_token("d1", "bob")
    bob = aws_client("sagemaker", jobs_door, issue_key(jobs_client, bob_token, "d1", "bob"))
    assert check_output(bob, "ListTrainingJobs", bob.list_training_jobs())["TrainingJobSummaries"] == []
    for name in ("run-0", ids[0]):
        with pytest.raises(ClientError) as hidden:
            bob.describe_training_job(TrainingJobName=name)
        assert hidden.value.response["Error"]["Code"] == "ResourceNotFound"
    with pytest.raises(ClientError) as hidden:
        bob.stop_training_job(TrainingJobName=ids[1])
    assert hidden.value.response["Error"]["Code"] == "ResourceNotFound"
    admin_token = jobs_seed.user_token("d1", "boss", role="admin")
    admin = aws_client("sagemaker", jobs_door, issue_key(jobs_client, admin_token, "d1", "boss"))
    assert len(admin.list_training_jobs()["TrainingJobSummaries"]) == 5  # the domain's jobs


def test_stop_training_job_asks_the_run_to_stop_and_the_job_ends_stopped(
    jobs_door: Any, jobs_client: Any, jobs_seed: Any, alice: tuple[str, Any]
) -> None:
    token, sm = alice
    job_id = _job(jobs_client, token)
    _upload(jobs_door, job_id, {k: v for k, v in sdk_files(steps=6).items() if k != "_SUCCESS"})
    assert evaluate_live(_ctx(jobs_door), job_id) == "evaluated"
    live = check_output(sm, "DescribeTrainingJob", sm.describe_training_job(TrainingJobName=job_id))
    assert (live["TrainingJobStatus"], live["SecondaryStatus"]) == ("InProgress", "Training")
    assert {m["MetricName"]: m["Value"] for m in live["FinalMetricDataList"]} == {"train:loss": 2.0 / 6}

    check_output(sm, "StopTrainingJob", sm.stop_training_job(TrainingJobName=job_id))
    sm.stop_training_job(TrainingJobName=job_id)  # asked again: nothing new
    stopping = check_output(sm, "DescribeTrainingJob", sm.describe_training_job(TrainingJobName=job_id))
    assert (stopping["TrainingJobStatus"], stopping["SecondaryStatus"]) == ("Stopping", "Stopping")
    assert [
        s["TrainingJobName"] for s in sm.list_training_jobs(StatusEquals="Stopping")["TrainingJobSummaries"]
    ] == ["bert-ft"]
    # The run learns it from its next upload's answer, as it learns a rule's stop.
    upload = jobs_client.put(
        f"{JOBS}/{job_id}/files/system/000009.jsonl.gz", content=b"x", headers=auth(token)
    )
    assert upload.status_code == 201 and upload.headers["X-ProfilerHub-Stop"] == "StopTrainingJob"
    assert jobs_client.post(f"{JOBS}/{job_id}/stop", headers=auth(token)).status_code == 202

    assert jobs_client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
    assert ingest_job(job_id, _ctx(jobs_door)) == "Ready"
    stopped = check_output(sm, "DescribeTrainingJob", sm.describe_training_job(TrainingJobName=job_id))
    assert (stopped["TrainingJobStatus"], stopped["SecondaryStatus"]) == ("Stopped", "Stopped")
    assert [t["Status"] for t in stopped["SecondaryStatusTransitions"]][-1] == "Stopped"
    with pytest.raises(ClientError) as over:
        sm.stop_training_job(TrainingJobName=job_id)
    assert "only a running job" in over.value.response["Error"]["Message"]
    audit = jobs_client.get(
        "/api/v1/audit", params={"action": "StopJob"}, headers=auth(jobs_seed.admin_token)
    ).json()["items"]
    assert [(e["target"], e["detail"].get("via")) for e in audit] == [(job_id, "sagemaker")]


def _job_json(**fields: Any) -> dict[str, bytes]:
    doc = {"format": "profilerhub-raw/1", "job": "bert-ft", "status": "InProgress", "start_ns": 1,
           "torch_version": "2.13.0", "torch_profiler": None} | fields  # fmt: skip
    return {"job.json": json.dumps(doc).encode()}


def test_update_training_job_asks_a_capture_that_rides_the_upload_answers_and_is_refused_clearly(
    jobs_door: Any, jobs_client: Any, jobs_seed: Any, alice: tuple[str, Any]
) -> None:
    token, sm = alice
    job_id = _job(jobs_client, token)
    detailed = {"ProfilingParameters": {"DetailedProfilingConfig": '{"StartStep": 5, "NumSteps": 3}'}}
    with pytest.raises(ClientError) as no_sdk:  # nothing uploaded yet: not known to be an SDK run
        sm.update_training_job(TrainingJobName=job_id, ProfilerConfig=detailed)
    assert "not run through the ProfilerHub SDK" in no_sdk.value.response["Error"]["Message"]
    _upload(jobs_door, job_id, _job_json(torch_version=None))
    refused = jobs_client.post(f"{JOBS}/{job_id}/captures", json={"steps": 2}, headers=auth(token))
    assert refused.status_code == 409 and "no torch" in refused.json()["error"]["message"]
    _upload(jobs_door, job_id, _job_json(torch_profiler={"wait": 1}))
    busy = jobs_client.post(f"{JOBS}/{job_id}/captures", json={"steps": 2}, headers=auth(token))
    assert busy.status_code == 409 and "own schedule" in busy.json()["error"]["message"]
    _upload(jobs_door, job_id, _job_json())

    answer = check_output(
        sm, "UpdateTrainingJob", sm.update_training_job(TrainingJobName=job_id, ProfilerConfig=detailed)
    )
    assert answer["TrainingJobArn"].endswith(job_id)
    described = check_output(sm, "DescribeTrainingJob", sm.describe_training_job(TrainingJobName=job_id))
    shown = json.loads(described["ProfilerConfig"]["ProfilingParameters"]["DetailedProfilingConfig"])
    assert shown == {"StartStep": 5, "NumSteps": 3, "RecordShapes": False}
    upload = jobs_client.put(
        f"{JOBS}/{job_id}/files/system/000001.jsonl.gz", content=b"x", headers=auth(token)
    )
    wanted = json.loads(upload.headers["X-ProfilerHub-Capture"])
    assert {k: wanted[k] for k in ("steps", "start_step", "record_shapes")} == {
        "steps": 3,
        "start_step": 5,
        "record_shapes": False,
    }
    rest = jobs_client.post(
        f"{JOBS}/{job_id}/captures", json={"steps": 4, "record_shapes": True}, headers=auth(token)
    )
    assert rest.status_code == 202 and rest.json()["steps"] == 4 and rest.json()["id"] != wanted["id"]
    again = jobs_client.put(
        f"{JOBS}/{job_id}/files/system/000002.jsonl.gz", content=b"x", headers=auth(token)
    )
    assert json.loads(again.headers["X-ProfilerHub-Capture"])["id"] == rest.json()["id"]  # the newest
    for bad in ({"steps": 0}, {"steps": 101}, {"steps": 2, "start_step": -1}, {"steps": 2, "x": 1}):
        assert jobs_client.post(f"{JOBS}/{job_id}/captures", json=bad, headers=auth(token)).status_code == 422
    by_time = {"DetailedProfilingConfig": '{"StartTimeInSecSinceEpoch": 1, "DurationInSeconds": 5}'}
    with pytest.raises(ClientError) as window:
        sm.update_training_job(TrainingJobName=job_id, ProfilerConfig={"ProfilingParameters": by_time})
    assert window.value.response["Error"]["Code"] == "ValidationException"

    rules = [{"RuleConfigurationName": "gpu", "RuleEvaluatorImage": "x",
              "RuleParameters": {"rule_to_invoke": "LowGPUUtilization", "threshold_p95": "70"}}]  # fmt: skip
    sm.update_training_job(TrainingJobName=job_id, ProfilerRuleConfigurations=rules)
    configured = sm.describe_training_job(TrainingJobName=job_id)["ProfilerRuleConfigurations"]
    assert [(c["RuleConfigurationName"], c["RuleParameters"]) for c in configured] == [
        ("LowGPUUtilization", {"rule_to_invoke": "LowGPUUtilization", "threshold_p95": "70"})
    ]
    bob = aws_client(
        "sagemaker", jobs_door, issue_key(jobs_client, jobs_seed.user_token("d1", "bob"), "d1", "bob")
    )
    with pytest.raises(ClientError) as hidden:
        bob.update_training_job(TrainingJobName=job_id, ProfilerConfig=detailed)
    assert hidden.value.response["Error"]["Code"] == "ResourceNotFound"
    audit = jobs_client.get(
        "/api/v1/audit", params={"action": "UpdateJob"}, headers=auth(jobs_seed.admin_token)
    )
    assert len(audit.json()["items"]) == 3  # two captures and the rules; the refusals changed nothing
