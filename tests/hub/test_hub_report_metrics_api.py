"""The profiling report and the metrics API through the real hub, after a real ingest: every
section present, the metrics against numpy on the same samples for every statistic and period,
bad queries refused, another user's job not found; the series retention rolling a job up as it ages."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from profilerhub_core.db.models import Job
from profilerhub_core.jobstorage import place_of
from profilerhub_worker.ingest import IngestContext, ingest_job
from tests.support.hub import auth
from tests.support.jobs import jsonl_gz, sdk_files

JOBS = "/api/v1/domains/d1/users/alice/jobs"
T0 = 1_000_000_000_000
RNG = np.random.default_rng(12)
N = 600
TS = T0 + np.sort(RNG.integers(0, 60_000_000_000, N))  # a minute of irregular samples
CPU = RNG.uniform(0, 100, N).round(2)


def _files() -> dict[str, bytes]:
    files = sdk_files(steps=20)
    files["system/000001.jsonl.gz"] = jsonl_gz(
        [{"ts_ns": int(t), "cpu_percent": float(c), "gpus": [{"index": 0, "util_percent": 50.0,
          "mem_used_bytes": 10.0, "mem_total_bytes": 100.0}]} for t, c in zip(TS, CPU, strict=True)]
    )  # fmt: skip
    return files


@pytest.fixture
def ready_job(jobs_client: Any, jobs_seed: Any, jobs_hub: Any) -> tuple[str, str]:
    token = jobs_seed.user_token("d1", "alice")
    job_id = jobs_client.post(JOBS, json={"name": "metrics"}, headers=auth(token)).json()["job_id"]
    store = jobs_hub.state.services.storage
    with jobs_hub.state.services.sessions() as session:
        place = place_of(session.get(Job, job_id))
    for name, data in _files().items():
        store.put(place.raw_key(name), data)
    assert jobs_client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
    ctx = IngestContext(sessions=jobs_hub.state.services.sessions, store=store, max_file_bytes=4 << 20,
                        max_trace_bytes=64 << 20, stale_after=timedelta(minutes=5))  # fmt: skip
    assert ingest_job(job_id, ctx) == "Ready"
    return job_id, token


def test_the_report_is_one_html_page_with_every_section_and_inline_svg(
    jobs_client: Any, ready_job: Any
) -> None:
    from profilerhub_analysis.html_report import SECTIONS

    job_id, token = ready_job
    response = jobs_client.get(f"{JOBS}/{job_id}/report", headers=auth(token))
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    html = response.text
    for key, title in SECTIONS:
        assert f'<section id="{key}"><h2>{title}</h2>' in html
    assert (
        "<svg" in html
        and "<script" not in html
        and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    )
    assert "ProfilerReport" not in html or "LowGPUUtilization" in html
    assert "default-src 'none'" in response.headers["content-security-policy"]


def test_metrics_lists_names_and_final_values(jobs_client: Any, ready_job: Any) -> None:
    job_id, token = ready_job
    out = jobs_client.get(f"{JOBS}/{job_id}/metrics", headers=auth(token)).json()
    names = {m["name"]: m for m in out["metrics"]}
    assert names["cpu_percent"]["samples"] == N and names["train:loss"]["kind"] == "training"
    final = {f["MetricName"]: f for f in out["FinalMetricDataList"]}
    assert final["cpu_percent"]["Value"] == CPU[-1] and final["cpu_percent"]["Timestamp_ns"] == TS[-1]
    assert final["train:loss"]["Value"] == pytest.approx(2.0 / 20)


NUMPY = {
    "Average": np.mean, "Minimum": np.min, "Maximum": np.max, "Sum": np.sum, "SampleCount": len,
    "p50": lambda v: np.percentile(v, 50), "p90": lambda v: np.percentile(v, 90),
    "p99": lambda v: np.percentile(v, 99),
}  # fmt: skip


@pytest.mark.parametrize("period", [0.1, 1, 7.5, 60, 3600])
def test_metric_datapoints_match_numpy_for_every_statistic(
    jobs_client: Any, ready_job: Any, period: float
) -> None:
    job_id, token = ready_job
    start, end = int(TS[0]) + 1_000_000_000, int(TS[-1]) - 1_000_000_000
    for stat, fn in NUMPY.items():
        params = {"name": "cpu_percent", "stat": stat, "period": period, "start": start, "end": end}
        out = jobs_client.get(f"{JOBS}/{job_id}/metrics", params=params, headers=auth(token)).json()
        p = int(round(period * 1e9))
        sel = (start <= TS) & (end > TS)
        buckets = (TS[sel] - start) // p
        expected = {int(start + b * p): float(fn(CPU[sel][buckets == b])) for b in np.unique(buckets)}
        got = {d["Timestamp_ns"]: d[stat] for d in out["datapoints"]}
        assert got.keys() == expected.keys(), stat
        assert np.allclose(list(got.values()), list(expected.values())), stat


@pytest.mark.parametrize(
    "params",
    [{"name": "nope"}, {"name": "cpu_percent", "stat": "Median"}, {"name": "cpu_percent", "period": 0.05},
     {"name": "cpu_percent", "period": 3601}, {"name": "cpu_percent", "start": 10, "end": 5},
     {"name": "cpu_percent", "period": "x"}],
)  # fmt: skip
def test_bad_metric_queries_get_a_4xx_with_the_error_shape(
    jobs_client: Any, ready_job: Any, params: dict[str, Any]
) -> None:
    job_id, token = ready_job
    response = jobs_client.get(f"{JOBS}/{job_id}/metrics", params=params, headers=auth(token))
    assert 400 <= response.status_code < 500 and set(response.json()["error"]) == {"code", "message"}


def test_a_running_job_has_metrics_so_far_and_no_report_and_an_ingesting_one_neither(
    jobs_client: Any, jobs_seed: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    job_id = jobs_client.post(JOBS, json={"name": "x"}, headers=auth(token)).json()["job_id"]
    report = jobs_client.get(f"{JOBS}/{job_id}/report", headers=auth(token))
    assert report.status_code == 409 and "Ready" in report.json()["error"]["message"]
    running = jobs_client.get(f"{JOBS}/{job_id}/metrics", headers=auth(token))
    assert running.status_code == 200, running.text
    assert running.json()["final"] is False and running.json()["metrics"] == []  # nothing streamed yet
    assert jobs_client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
    for part in ("report", "metrics"):  # completed, not ingested yet
        response = jobs_client.get(f"{JOBS}/{job_id}/{part}", headers=auth(token))
        assert response.status_code == 409 and "Ready" in response.json()["error"]["message"]


def test_a_user_cannot_read_another_users_report_or_metrics(
    jobs_client: Any, jobs_seed: Any, ready_job: Any
) -> None:
    job_id, _ = ready_job
    bob = jobs_seed.user_token("d1", "bob")
    for part in ("report", "metrics", "rules"):
        assert jobs_client.get(f"{JOBS}/{job_id}/{part}", headers=auth(bob)).status_code == 404
        assert (
            jobs_client.get(
                f"/api/v1/domains/d1/users/bob/jobs/{job_id}/{part}", headers=auth(bob)
            ).status_code
            == 404
        )


def test_the_report_of_a_gpu_run_shows_its_rule_findings(jobs_client: Any, ready_job: Any) -> None:
    job_id, token = ready_job
    rules = jobs_client.get(f"{JOBS}/{job_id}/rules", headers=auth(token)).json()
    assert rules["final"] and rules["rules"][0]["rule"] == "ProfilerReport"
    html = jobs_client.get(f"{JOBS}/{job_id}/report", headers=auth(token)).text
    for child in rules["rules"][0]["rules"]:
        assert child["rule"] in html


def _metrics(jobs_client: Any, job_id: str, token: str, **params: Any) -> Any:
    return jobs_client.get(f"{JOBS}/{job_id}/metrics", params=params, headers=auth(token))


def test_series_retention_rolls_a_job_up_as_it_ages_then_deletes_its_series(
    jobs_client: Any, jobs_hub: Any, ready_job: Any
) -> None:
    from profilerhub_core.retention import parse_retention
    from profilerhub_worker.retention import apply_series_retention

    job_id, token = ready_job
    sessions, store = jobs_hub.state.services.sessions, jobs_hub.state.services.storage
    with sessions() as session:
        job = session.get(Job, job_id)
        completed, place = job.completed_at, place_of(job)
    policy = parse_retention("full:1d,1s:2d,10s:3d")
    before = _metrics(jobs_client, job_id, token).json()
    assert before["resolution_s"] is None

    def run(days: float) -> dict[str, int]:
        return apply_series_retention(sessions, store, policy, now=completed + timedelta(days=days))

    assert run(0.5) == {"rolled": 0, "deleted": 0}  # still at full resolution
    assert run(1.5) == {"rolled": 1, "deleted": 0}
    assert run(1.6) == {"rolled": 0, "deleted": 0}  # done once
    listing = _metrics(jobs_client, job_id, token).json()
    assert listing["resolution_s"] == 1.0
    assert listing["FinalMetricDataList"] == before["FinalMetricDataList"]  # each period keeps its last
    assert {m["name"]: m["samples"] for m in listing["metrics"]}["cpu_percent"] == N
    for period in (1, 10, 30):  # whole kept periods (multiples of 1 s): numpy on the same samples
        for stat, fn in NUMPY.items():
            if stat.startswith("p") and period == 30:
                continue  # no kept resolution of 30 s: refused below
            params = {"name": "cpu_percent", "stat": stat, "period": period}
            points = _metrics(jobs_client, job_id, token, **params).json()["datapoints"]
            got = {d["Timestamp_ns"]: d[stat] for d in points}
            p = period * 10**9
            kept = p if stat.startswith("p") else 10**9  # the kept resolution the answer is made of
            first = int(TS[0]) // kept * kept  # by default from the first kept period
            buckets = (TS - first) // p
            expected = {int(first + b * p): float(fn(CPU[buckets == b])) for b in np.unique(buckets)}
            assert got.keys() == expected.keys(), (stat, period)
            assert np.allclose(list(got.values()), list(expected.values()), rtol=1e-12), (stat, period)
    refused = _metrics(jobs_client, job_id, token, name="cpu_percent", stat="p90", period=30)
    assert refused.status_code == 400 and "equal to 1 s or 10 s" in refused.json()["error"]["message"]
    refused = _metrics(jobs_client, job_id, token, name="cpu_percent", period=1.5)
    assert refused.status_code == 400 and "a multiple of 1 s or 10 s" in refused.json()["error"]["message"]
    assert jobs_client.get(f"{JOBS}/{job_id}/report", headers=auth(token)).status_code == 200

    assert run(2.5) == {"rolled": 1, "deleted": 0}  # the 1 s periods go, the 10 s ones stay
    assert _metrics(jobs_client, job_id, token).json()["resolution_s"] == 10.0
    assert _metrics(jobs_client, job_id, token, name="cpu_percent", period=1).status_code == 400
    assert _metrics(jobs_client, job_id, token, name="cpu_percent", stat="p99", period=10).status_code == 200

    assert run(3.5) == {"rolled": 0, "deleted": 1}
    gone = _metrics(jobs_client, job_id, token)
    assert gone.status_code == 404 and "series retention" in gone.json()["error"]["message"]
    assert not store.exists(place.processed_key("series.npz"))
    assert jobs_client.get(f"{JOBS}/{job_id}/report", headers=auth(token)).status_code == 200  # summary stays
    assert run(10) == {"rolled": 0, "deleted": 0}
    with sessions() as session:
        job = session.get(Job, job_id)
        assert job.series_resolution_s == 10.0 and job.series_deleted_at is not None


def test_series_retention_leaves_a_job_ingested_again_meanwhile_alone(jobs_hub: Any, ready_job: Any) -> None:
    import sqlalchemy as sa

    from profilerhub_core.db.models import utcnow
    from profilerhub_core.retention import parse_retention
    from profilerhub_worker.retention import apply_series_retention

    job_id, _ = ready_job
    sessions, store = jobs_hub.state.services.sessions, jobs_hub.state.services.storage
    with sessions() as session:
        job = session.get(Job, job_id)
        completed, key = job.completed_at, place_of(job).processed_key("series.npz")
    original = store.get(key)

    class IngestedWhileRead:  # the job is ingested again while the task reads its series
        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def get(self, k: str) -> bytes:
            with sessions() as session:
                session.execute(sa.update(Job).where(Job.id == job_id).values(updated_at=utcnow()))
                session.commit()
            return store.get(k)

    policy = parse_retention("full:1d,1s:2d,10s:3d")
    later = completed + timedelta(days=1.5)
    assert apply_series_retention(sessions, IngestedWhileRead(), policy, now=later) == {
        "rolled": 0,
        "deleted": 0,
    }
    assert store.get(key) == original
    with sessions() as session:
        assert session.get(Job, job_id).series_resolution_s is None
    assert apply_series_retention(sessions, store, policy, now=later) == {
        "rolled": 1,
        "deleted": 0,
    }  # next run
