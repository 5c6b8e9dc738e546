"""boto3's own ``cloudwatch`` client against the hub's ``/cloudwatch`` door, over real HTTP: a
job's metrics under SageMaker's namespace, names and dimension, equal to the REST metrics API for
every statistic, while the job runs and once it is Ready; another user's key sees none of it.
Every answer is checked against botocore's output shape (``check_output``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from botocore.exceptions import ClientError

from profilerhub_core.db.models import Job
from profilerhub_core.jobstorage import place_of
from profilerhub_worker.ingest import IngestContext, ingest_job
from profilerhub_worker.ingest.live_rules import evaluate_live
from tests.support.hub import auth
from tests.support.jobs import jsonl_gz, sdk_files
from tests.support.sagemaker import aws_client, check_output, issue_key

JOBS = "/api/v1/domains/d1/users/alice/jobs"
NAMESPACE = "/aws/sagemaker/TrainingJobs"
T0 = 1_000_000_000_000  # ns: whole seconds, as boto3 sends StartTime
RNG = np.random.default_rng(22)
N = 900
TS = T0 + np.sort(RNG.integers(0, 90_000_000_000, N))  # 90 s of irregular samples
CPU = RNG.uniform(0, 100, N).round(2)
STATS = ["Average", "Minimum", "Maximum", "Sum", "SampleCount"]
EXTENDED = ["p50", "p90", "p99"]


def _files() -> dict[str, bytes]:
    files = {k: v for k, v in sdk_files(steps=20).items() if k != "_SUCCESS"}
    files["system/000002.jsonl.gz"] = jsonl_gz(
        [{"ts_ns": int(t), "cpu_percent": float(c), "mem_percent": 40.0, "gpus": [{"index": 0,
          "util_percent": 50.0, "mem_used_bytes": 10.0, "mem_total_bytes": 100.0}]}
         for t, c in zip(TS, CPU, strict=True)]
    )  # fmt: skip
    return files


def _ctx(hub: Any) -> IngestContext:
    return IngestContext(sessions=hub.state.services.sessions, store=hub.state.services.storage,
                         max_file_bytes=4 << 20, max_trace_bytes=64 << 20,
                         stale_after=timedelta(minutes=5))  # fmt: skip


def _running_job(client: Any, hub: Any, token: str) -> str:
    job_id = str(client.post(JOBS, json={"name": "bert-ft"}, headers=auth(token)).json()["job_id"])
    store = hub.state.services.storage
    with hub.state.services.sessions() as session:
        place = place_of(session.get(Job, job_id))
    for name, data in _files().items():
        store.put(place.raw_key(name), data)
    assert evaluate_live(_ctx(hub), job_id) == "evaluated"  # the live scan caches what streamed
    return job_id


@pytest.fixture
def alice(jobs_door: Any, jobs_client: Any, jobs_seed: Any) -> tuple[str, Any]:
    token = jobs_seed.user_token("d1", "alice")
    return token, aws_client("cloudwatch", jobs_door, issue_key(jobs_client, token, "d1", "alice"))


def _at(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, UTC)


def _rest(client: Any, token: str, job_id: str, name: str, stat: str, period: int) -> dict[int, float]:
    params = {"name": name, "stat": stat, "period": period, "start": T0, "end": T0 + 100 * 10**9}
    answer = client.get(f"{JOBS}/{job_id}/metrics", params=params, headers=auth(token))
    assert answer.status_code == 200, answer.text
    return {d["Timestamp_ns"]: d[stat] for d in answer.json()["datapoints"]}


def _statistics(cw: Any, dimension: dict[str, str], name: str, period: int, **more: Any) -> dict[str, Any]:
    answer = cw.get_metric_statistics(
        Namespace=NAMESPACE, MetricName=name, Dimensions=[dimension], StartTime=_at(T0),
        EndTime=_at(T0 + 100 * 10**9), Period=period, **more,
    )  # fmt: skip
    return check_output(cw, "GetMetricStatistics", answer)


def _by_time(points: list[dict[str, Any]], stat: str) -> dict[int, float]:
    out = {}
    for p in points:
        value = p["ExtendedStatistics"][stat] if stat.startswith("p") else p[stat]
        out[int(round(p["Timestamp"].timestamp() * 1e9))] = value
    return out


def _assert_equal_to_rest(
    cw: Any, client: Any, token: str, job_id: str, dimension: dict[str, str], rest_name: str, name: str
) -> None:
    for period in (1, 10, 60):
        answer = _statistics(cw, dimension, name, period, Statistics=STATS, ExtendedStatistics=EXTENDED)
        assert answer["Label"] == name and answer["Datapoints"], (name, period)
        for stat in STATS + EXTENDED:
            got, rest = (
                _by_time(answer["Datapoints"], stat),
                _rest(client, token, job_id, rest_name, stat, period),
            )
            assert got.keys() == rest.keys(), (name, period, stat)
            assert np.allclose(list(got.values()), list(rest.values())), (name, period, stat)


def test_a_running_job_then_ready_answers_as_the_rest_metrics_api_for_every_statistic(
    jobs_door: Any, jobs_client: Any, alice: tuple[str, Any]
) -> None:
    token, cw = alice
    job_id = _running_job(jobs_client, jobs_door, token)
    host = {"Name": "Host", "Value": "bert-ft/algo-1"}
    _assert_equal_to_rest(cw, jobs_client, token, job_id, host, "cpu_percent", "CPUUtilization")
    _assert_equal_to_rest(cw, jobs_client, token, job_id, {"Name": "TrainingJobName", "Value": job_id},
                          "train:loss", "train:loss")  # fmt: skip
    listed = check_output(cw, "ListMetrics", cw.list_metrics(Namespace=NAMESPACE))
    system = ["CPUUtilization", "MemoryUtilization", "GPUUtilization", "GPUMemoryUtilization"]
    assert [m["MetricName"] for m in listed["Metrics"]] == ["train:acc", "train:loss", *system]
    assert {m["Dimensions"][0]["Value"] for m in listed["Metrics"]} == {"bert-ft/algo-1"}
    gpu_memory = _statistics(cw, host, "GPUMemoryUtilization", 60, Statistics=["Maximum"], Unit="Percent")
    assert {p["Maximum"] for p in gpu_memory["Datapoints"]} == {10.0}

    assert jobs_client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
    assert ingest_job(job_id, _ctx(jobs_door)) == "Ready"
    _assert_equal_to_rest(cw, jobs_client, token, job_id, host, "cpu_percent", "CPUUtilization")
    ready = check_output(cw, "ListMetrics", cw.list_metrics(Dimensions=[{"Name": "Host"}]))  # from the row
    assert ready["Metrics"] == listed["Metrics"]
    data = cw.get_metric_data(
        MetricDataQueries=[
            {"Id": "loss", "MetricStat": {"Metric": {"Namespace": NAMESPACE, "MetricName": "train:loss",
             "Dimensions": [host]}, "Period": 60, "Stat": "Maximum"}},
            {"Id": "cpu", "MetricStat": {"Metric": {"Namespace": NAMESPACE, "MetricName": "CPUUtilization",
             "Dimensions": [host]}, "Period": 10, "Stat": "p90"}, "Label": "cpu p90"},
        ],
        StartTime=_at(T0), EndTime=_at(T0 + 100 * 10**9), ScanBy="TimestampAscending",
    )  # fmt: skip
    loss, cpu = check_output(cw, "GetMetricData", data)["MetricDataResults"]
    assert loss["Values"] == [2.0] and cpu["Label"] == "cpu p90"
    rest = _rest(jobs_client, token, job_id, "cpu_percent", "p90", 10)
    assert [int(round(t.timestamp() * 1e9)) for t in cpu["Timestamps"]] == list(rest)
    assert np.allclose(cpu["Values"], list(rest.values()))


def test_refusals_and_other_users_and_kept_resolutions(
    jobs_door: Any, jobs_client: Any, jobs_seed: Any, alice: tuple[str, Any]
) -> None:
    token, cw = alice
    job_id = _running_job(jobs_client, jobs_door, token)
    host = {"Name": "Host", "Value": f"{job_id}/algo-1"}
    with pytest.raises(ClientError) as none:
        _statistics(cw, host, "CPUUtilization", 60)
    assert none.value.response["Error"]["Code"] == "InvalidParameterCombination"
    with pytest.raises(ClientError) as many:  # 2000 periods of 1 s: more than 1,440
        cw.get_metric_statistics(Namespace=NAMESPACE, MetricName="CPUUtilization", Dimensions=[host],
                                 StartTime=_at(T0), EndTime=_at(T0 + 2000 * 10**9), Period=1,
                                 Statistics=["Average"])  # fmt: skip
    assert many.value.response["Error"]["Code"] == "InvalidParameterCombination"
    with pytest.raises(ClientError) as math:
        cw.get_metric_data(MetricDataQueries=[{"Id": "m", "Expression": "SUM(METRICS())"}],
                           StartTime=_at(T0), EndTime=_at(T0 + 10**11))  # fmt: skip
    assert math.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert "not supported" in math.value.response["Error"]["Message"]
    for dims in ([{"Name": "Host", "Value": "bert-ft/algo-2"}], [{"Name": "InstanceId", "Value": "i-1"}]):
        answer = cw.get_metric_statistics(Namespace=NAMESPACE, MetricName="CPUUtilization", Dimensions=dims,
                                          StartTime=_at(T0), EndTime=_at(T0 + 10**11), Period=60,
                                          Statistics=["Average"])  # fmt: skip
        assert answer["Datapoints"] == []  # no such metric: no datapoints, as on AWS

    bob_token = jobs_seed.user_token("d1", "bob")
    bob = aws_client("cloudwatch", jobs_door, issue_key(jobs_client, bob_token, "d1", "bob"))
    assert check_output(bob, "ListMetrics", bob.list_metrics())["Metrics"] == []
    for dimension in (host, {"Name": "Host", "Value": "bert-ft/algo-1"}):
        assert _statistics(bob, dimension, "CPUUtilization", 60, Statistics=["Average"])["Datapoints"] == []

    from profilerhub_core.retention import parse_retention
    from profilerhub_worker.retention import apply_series_retention

    assert jobs_client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
    assert ingest_job(job_id, _ctx(jobs_door)) == "Ready"
    with jobs_door.state.services.sessions() as session:
        completed = session.get(Job, job_id).completed_at
    store, policy = jobs_door.state.services.storage, parse_retention("full:1d,10s:3d")
    assert apply_series_retention(
        jobs_door.state.services.sessions, store, policy, now=completed + timedelta(days=1.5)
    )
    finer = _statistics(cw, host, "CPUUtilization", 1, Statistics=["Average"], ExtendedStatistics=["p90"])
    assert finer["Datapoints"] == []  # 1 s is no longer kept: CloudWatch's answer, not an error
    kept = _statistics(cw, host, "CPUUtilization", 60, Statistics=["Average", "SampleCount"])
    got, rest = (
        _by_time(kept["Datapoints"], "Average"),
        _rest(jobs_client, token, job_id, "cpu_percent", "Average", 60),
    )
    assert got.keys() == rest.keys() and np.allclose(list(got.values()), list(rest.values()))
    assert sum(p["SampleCount"] for p in kept["Datapoints"]) == N + 20  # every sample, rolled up


def _rank_job(client: Any, hub: Any, token: str, rank: int | None, cpu: float) -> str:
    """A running job named ``ddp`` whose run's ``job.json`` says ``rank`` (None: says none),
    sampling ``cpu`` % and a disk 37.5 % full."""
    job_id = str(client.post(JOBS, json={"name": "ddp"}, headers=auth(token)).json()["job_id"])
    with hub.state.services.sessions() as session:
        place = place_of(session.get(Job, job_id))
    doc = {"format": "profilerhub-raw/1", "job": "ddp", "status": "InProgress", "start_ns": T0}
    samples = [{"ts_ns": T0 + i * 10**9, "cpu_percent": cpu, "disk_percent": 37.5} for i in range(30)]
    files = {"job.json": json.dumps(doc | ({"rank": rank} if rank is not None else {})).encode(),
             "system/000001.jsonl.gz": jsonl_gz(samples)}  # fmt: skip
    for name, data in files.items():
        hub.state.services.storage.put(place.raw_key(name), data)
    assert evaluate_live(_ctx(hub), job_id) == "evaluated"
    return job_id


def test_each_rank_of_a_distributed_run_is_its_own_host_and_disk_utilization_is_the_sdks(
    jobs_door: Any, jobs_client: Any, alice: tuple[str, Any]
) -> None:
    """A two-rank run is two jobs of one name (one SDK process each): ``Host=ddp/algo-1`` and
    ``ddp/algo-2`` are rank 0's and rank 1's, never merged; an older run of the name is named by id."""
    token, cw = alice
    old = _rank_job(jobs_client, jobs_door, token, None, 10.0)  # an earlier run: rank 0 (no RANK)
    rank0 = _rank_job(jobs_client, jobs_door, token, 0, 20.0)
    rank1 = _rank_job(jobs_client, jobs_door, token, 1, 80.0)
    listed = check_output(cw, "ListMetrics", cw.list_metrics(MetricName="CPUUtilization"))["Metrics"]
    assert sorted(m["Dimensions"][0]["Value"] for m in listed) == sorted(
        ["ddp/algo-1", "ddp/algo-2", f"{old}/algo-1"]
    )
    for value, cpu in (("ddp/algo-1", 20.0), ("ddp/algo-2", 80.0), (f"{old}/algo-1", 10.0),
                       (f"{rank1}/algo-2", 80.0), (f"{rank0}/algo-1", 20.0)):  # fmt: skip
        points = _statistics(
            cw, {"Name": "Host", "Value": value}, "CPUUtilization", 60, Statistics=["Average"]
        )
        assert {p["Average"] for p in points["Datapoints"]} == {cpu}, value
    for value in ("ddp/algo-3", f"{rank1}/algo-1", "ddp/algo-0"):  # no such rank of that job: no metric
        points = _statistics(
            cw, {"Name": "Host", "Value": value}, "CPUUtilization", 60, Statistics=["Average"]
        )
        assert points["Datapoints"] == [], value
    by_name = _statistics(cw, {"Name": "TrainingJobName", "Value": "ddp"}, "CPUUtilization", 60,
                          Statistics=["Average"])  # fmt: skip
    assert {p["Average"] for p in by_name["Datapoints"]} == {80.0}  # the newest of the name

    names = check_output(
        cw, "ListMetrics", cw.list_metrics(Dimensions=[{"Name": "Host", "Value": "ddp/algo-2"}])
    )
    assert [m["MetricName"] for m in names["Metrics"]] == ["CPUUtilization", "DiskUtilization"]
    disk = _statistics(cw, {"Name": "Host", "Value": "ddp/algo-2"}, "DiskUtilization", 60,
                       Statistics=["Maximum", "SampleCount"], Unit="Percent")  # fmt: skip
    assert {p["Maximum"] for p in disk["Datapoints"]} == {37.5}
    assert sum(p["SampleCount"] for p in disk["Datapoints"]) == 30
