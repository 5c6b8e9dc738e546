"""boto3's own ``logs`` client against the hub's ``/logs`` door, and ``GET …/jobs/{id}/logs``: the
lines a run printed (as the SDK delivers them, one folder per rank), in order, with AWS's tokens
and plain filter patterns; another user's key sees none of it. Every answer is checked against
botocore's output shape (``check_output``)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from profilerhub_core.db.models import Job
from profilerhub_core.jobstorage import place_of
from tests.support.hub import auth
from tests.support.jobs import jsonl_gz
from tests.support.sagemaker import aws_client, check_output, issue_key

JOBS = "/api/v1/domains/d1/users/alice/jobs"
GROUP = "/aws/sagemaker/TrainingJobs"
T0 = 1_700_000_000_000_000_000


def _lines(rank: int, first: int, n: int) -> bytes:
    return jsonl_gz(
        [{"ts_ns": T0 + (first + i) * 10_000_000, "source": "stderr" if i % 5 == 4 else "stdout",
          "message": f"rank {rank} step {first + i} loss={1 / (first + i + 1):.4f}"} for i in range(n)]
    )  # fmt: skip


@pytest.fixture
def job(jobs_door: Any, jobs_client: Any, jobs_seed: Any) -> tuple[str, str, Any]:
    """A running job of alice's whose ranks 0 and 1 printed 30 and 5 lines (rank 0's in two chunks,
    one with an empty line)."""
    token = jobs_seed.user_token("d1", "alice")
    job_id = str(jobs_client.post(JOBS, json={"name": "bert-ft"}, headers=auth(token)).json()["job_id"])
    store = jobs_door.state.services.storage
    with jobs_door.state.services.sessions() as session:
        place = place_of(session.get(Job, job_id))
    store.put(place.raw_key("logs/rank0/000001.jsonl.gz"), _lines(0, 0, 20))
    blank = jsonl_gz([{"ts_ns": T0 + 195_000_000, "source": "stdout", "message": ""}])
    store.put(place.raw_key("logs/rank0/000002.jsonl.gz"), blank)
    store.put(place.raw_key("logs/rank0/000003.jsonl.gz"), _lines(0, 20, 10))
    store.put(place.raw_key("logs/rank1/000001.jsonl.gz"), _lines(1, 0, 5))
    logs = aws_client("logs", jobs_door, issue_key(jobs_client, token, "d1", "alice"))
    return job_id, token, logs


def test_streams_events_tokens_and_filters_of_a_running_job(
    jobs_door: Any, jobs_client: Any, job: tuple[str, str, Any]
) -> None:
    job_id, token, logs = job
    groups = check_output(logs, "DescribeLogGroups", logs.describe_log_groups(logGroupNamePrefix="/aws/sage"))
    assert [g["logGroupName"] for g in groups["logGroups"]] == [GROUP]
    streams = check_output(logs, "DescribeLogStreams", logs.describe_log_streams(logGroupName=GROUP))
    names = [s["logStreamName"] for s in streams["logStreams"]]
    with jobs_door.state.services.sessions() as session:
        epoch = int(session.get(Job, job_id).created_at.timestamp())
    assert names == [f"bert-ft/algo-1-{epoch}", f"bert-ft/algo-2-{epoch}"]
    assert streams["logStreams"][0]["firstEventTimestamp"] == T0 // 1_000_000
    assert streams["logStreams"][0]["lastEventTimestamp"] == T0 // 1_000_000 + 290

    stream = names[0]
    tail = check_output(
        logs, "GetLogEvents", logs.get_log_events(logGroupName=GROUP, logStreamName=stream, limit=8)
    )
    assert [e["message"].split(" loss")[0] for e in tail["events"]] == [
        f"rank 0 step {i}" for i in range(22, 30)
    ]
    back = logs.get_log_events(
        logGroupName=GROUP, logStreamName=stream, limit=8, nextToken=tail["nextBackwardToken"]
    )
    assert [e["message"] for e in back["events"]][-1].startswith("rank 0 step 21")
    everything, token_ = [], None  # forward from the head, 7 at a time, until the token repeats
    while True:
        kwargs = {"nextToken": token_} if token_ else {"startFromHead": True}
        page = logs.get_log_events(logGroupName=GROUP, logStreamName=stream, limit=7, **kwargs)
        everything += [e["message"] for e in page["events"]]
        if page["nextForwardToken"] == token_:
            break
        token_ = page["nextForwardToken"]
    assert everything == [f"rank 0 step {i} loss={1 / (i + 1):.4f}" for i in range(30)]  # in order, no blank

    found = check_output(
        logs, "FilterLogEvents", logs.filter_log_events(logGroupName=GROUP, filterPattern='"step 2" loss')
    )
    assert [e["message"].split(" loss")[0] for e in found["events"]] == [
        "rank 0 step 2", "rank 1 step 2", *[f"rank 0 step {i}" for i in range(20, 30)]
    ]  # fmt: skip
    assert {s["logStreamName"] for s in found["searchedLogStreams"]} == set(names)
    paged = logs.get_paginator("filter_log_events").paginate(
        logGroupName=GROUP, logStreamNames=[names[1]], PaginationConfig={"PageSize": 2}
    )
    assert [e["message"] for p in paged for e in p["events"]] == [
        f"rank 1 step {i} loss={1 / (i + 1):.4f}" for i in range(5)
    ]
    with pytest.raises(ClientError) as regex:
        logs.filter_log_events(logGroupName=GROUP, filterPattern="{ $.level = 5 }")
    assert regex.value.response["Error"]["Code"] == "InvalidParameterException"

    rest = jobs_client.get(f"{JOBS}/{job_id}/logs", params={"offset": 25, "limit": 3}, headers=auth(token))
    body = rest.json()
    assert rest.status_code == 200 and body["ranks"] == [0, 1] and body["stream"] == stream
    assert [line["message"][:13] for line in body["lines"]] == [
        "rank 0 step 2"
    ] * 3  # 24, 25, 26 (a blank at 20)
    assert (body["total"], body["next_offset"]) == (31, 28)
    assert [line["source"] for line in body["lines"]] == ["stderr", "stdout", "stdout"]
    one = jobs_client.get(f"{JOBS}/{job_id}/logs", params={"rank": 1}, headers=auth(token)).json()
    assert [line["source"] for line in one["lines"]] == ["stdout"] * 4 + ["stderr"]
    assert (
        jobs_client.get(f"{JOBS}/{job_id}/logs", params={"rank": 7}, headers=auth(token)).status_code == 404
    )


def test_another_users_key_sees_no_stream_and_missing_ones_are_not_found(
    jobs_door: Any, jobs_client: Any, jobs_seed: Any, job: tuple[str, str, Any]
) -> None:
    job_id, _, logs = job
    stream = logs.describe_log_streams(logGroupName=GROUP)["logStreams"][0]["logStreamName"]
    bob_token = jobs_seed.user_token("d1", "bob")
    bob = aws_client("logs", jobs_door, issue_key(jobs_client, bob_token, "d1", "bob"))
    assert (
        check_output(bob, "DescribeLogStreams", bob.describe_log_streams(logGroupName=GROUP))["logStreams"]
        == []
    )
    assert bob.filter_log_events(logGroupName=GROUP)["events"] == []
    for name in (stream, stream.replace("bert-ft", job_id), "bert-ft/algo-1-12", "nonsense"):
        with pytest.raises(ClientError) as hidden:
            bob.get_log_events(logGroupName=GROUP, logStreamName=name)
        assert hidden.value.response["Error"]["Code"] == "ResourceNotFoundException", name
    assert logs.get_log_events(logGroupName=GROUP, logStreamName=stream.replace("bert-ft", job_id))["events"]
    with pytest.raises(ClientError) as group:
        logs.get_log_events(logGroupName="/aws/lambda/x", logStreamName=stream)
    assert group.value.response["Error"]["Code"] == "ResourceNotFoundException"
    answer = jobs_client.get(f"{JOBS}/{job_id}/logs", headers=auth(bob_token))
    assert answer.status_code == 404


def test_rest_pages_span_chunks_and_a_chunk_replaced_whole_is_counted_again(
    jobs_door: Any, jobs_client: Any, job: tuple[str, str, Any]
) -> None:
    """Every offset gives the lines a whole read gives (the kept per-chunk counts skip chunks, never
    lines), and a chunk cut short, then uploaded whole under the same name, counts its new lines."""
    job_id, token, _ = job
    whole = [f"rank 0 step {i} loss={1 / (i + 1):.4f}" for i in range(20)] + [""]
    whole += [f"rank 0 step {i} loss={1 / (i + 1):.4f}" for i in range(20, 30)]
    for offset in range(0, 33):
        for limit in (1, 7, 40):
            body = jobs_client.get(f"{JOBS}/{job_id}/logs", params={"offset": offset, "limit": limit},
                                   headers=auth(token)).json()  # fmt: skip
            assert [line["message"] for line in body["lines"]] == whole[offset : offset + limit], (
                offset,
                limit,
            )
            assert body["total"] == 31 and body["next_offset"] == min(offset, 31) + len(body["lines"])
    store = jobs_door.state.services.storage
    with jobs_door.state.services.sessions() as session:
        place = place_of(session.get(Job, job_id))
    cut = _lines(0, 30, 4)
    store.put(place.raw_key("logs/rank0/000004.jsonl.gz"), cut[: len(cut) // 2])  # cut short: unreadable
    assert jobs_client.get(f"{JOBS}/{job_id}/logs", headers=auth(token)).json()["total"] == 31
    store.put(place.raw_key("logs/rank0/000004.jsonl.gz"), _lines(0, 30, 4))  # the retry, whole
    tail = jobs_client.get(f"{JOBS}/{job_id}/logs", params={"offset": 31}, headers=auth(token)).json()
    assert tail["total"] == 35 and [line["message"][:14] for line in tail["lines"]] == [
        f"rank 0 step {i}" for i in range(30, 34)
    ]
