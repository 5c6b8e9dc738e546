"""The hub's CPU per CloudWatch ``GetMetricStatistics`` through boto3, beside the REST metrics call.

    .venv/bin/python benchmarks/bench_cloudwatch.py [--requests 300] [--points 36000]

Sets up a fresh SQLite hub home (migrated, domain ``bench``, user ``alice`` with a bearer token and
an access key) and one Ready job: a one-hour run sampled every 100 ms (``--points`` system samples,
36,000 by default), ingested by the worker's own ``ingest_job``. Starts ``profilerhub hub --workers 1``
and sends, one after another from this process, in alternating rounds: boto3's
``get_metric_statistics`` of ``CPUUtilization`` over the whole hour (``Period`` 60, the five
statistics and p50/p90/p99: 60 datapoints made of every sample), and httpx's
``GET …/jobs/{id}/metrics?name=cpu_percent&stat=Average&period=60`` (the anchor). The hub's CPU
time (user + system, from /proc via psutil) over each kind's rounds, divided by its requests, is
what a request costs it. Target (issue 22): under 50 ms per ``get_metric_statistics``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from datetime import UTC, datetime, timedelta

import httpx
import psutil
from bench_sagemaker import _free_port, _measure, aws_client, hub_env, start_hub

T0 = 1_700_000_000 * 10**9


def _prepare(env: dict[str, str], points: int) -> tuple[str, str, str, str]:
    """Migrate and seed the home in ``env``, ingest the job; (bearer, key id, secret, job id)."""
    os.environ.update(env)
    from profilerhub_core.bootstrap import first_start
    from profilerhub_core.db.migrate import upgrade
    from profilerhub_core.db.models import Job, Role
    from profilerhub_core.db.session import make_engine, session_factory
    from profilerhub_core.jobstorage import open_job_store, place_of
    from profilerhub_core.records import access_keys, domains, jobs, tokens, users
    from profilerhub_core.settings import Settings
    from profilerhub_worker.ingest import IngestContext, ingest_job

    settings = Settings()
    engine = make_engine(settings)
    upgrade(engine)
    first_start(settings, engine)
    sessions = session_factory(engine)
    with sessions() as session:
        domain = domains.create_domain(session, "bench")
        alice = users.create_user(session, domain, "alice", Role.user)
        _, bearer = tokens.issue_token(session, alice, note="bench")
        key, secret = access_keys.issue_access_key(session, alice, settings.signing_key())
        job = jobs.create_job(session, domain, alice, "bert-ft")
        session.commit()
        key_id, job_id, place = key.prefix, job.id, place_of(job)
    store = open_job_store(settings)
    samples = [{"ts_ns": T0 + i * 100_000_000, "cpu_percent": (i * 37) % 100 + 0.5} for i in range(points)]
    lines = "\n".join(json.dumps(s) for s in samples) + "\n"
    job_json = {"format": "profilerhub-raw/1", "job": "bert-ft", "status": "Completed", "start_ns": T0,
                "end_ns": T0 + points * 100_000_000}  # fmt: skip
    store.put(place.raw_key("job.json"), json.dumps(job_json).encode())
    store.put(place.raw_key("system/000001.jsonl.gz"), gzip.compress(lines.encode()))
    with sessions() as session:
        jobs.mark_complete(session, session.get(Job, job_id))
        session.commit()
    ctx = IngestContext(sessions=sessions, store=store, max_file_bytes=1 << 30, max_trace_bytes=1 << 30,
                        stale_after=timedelta(minutes=5))  # fmt: skip
    assert ingest_job(job_id, ctx) == "Ready"
    engine.dispose()
    return bearer, key_id, secret, job_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--points", type=int, default=36_000)
    args = parser.parse_args()
    port = _free_port()
    env = hub_env("cloudwatch", port)
    bearer, key_id, secret, job_id = _prepare(env, args.points)
    hub_cmd, hub, base = start_hub(env, port)
    try:
        process = psutil.Process(hub.pid)
        cw = aws_client("cloudwatch", base, key_id, secret)
        start = datetime.fromtimestamp(T0 / 1e9, UTC)
        end = start + timedelta(seconds=args.points / 10)

        def statistics() -> object:
            return cw.get_metric_statistics(
                Namespace="/aws/sagemaker/TrainingJobs", MetricName="CPUUtilization",
                Dimensions=[{"Name": "Host", "Value": "bert-ft/algo-1"}], StartTime=start, EndTime=end,
                Period=60, Statistics=["Average", "Minimum", "Maximum", "Sum", "SampleCount"],
                ExtendedStatistics=["p50", "p90", "p99"],
            )  # fmt: skip

        points = statistics()["Datapoints"]  # type: ignore[index]
        counted = sum(p["SampleCount"] for p in points)
        assert counted == args.points, (len(points), counted)
        rest = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {bearer}"})
        path = f"/api/v1/domains/bench/users/alice/jobs/{job_id}/metrics"
        params = {"name": "cpu_percent", "stat": "Average", "period": 60}
        assert len(rest.get(path, params=params).json()["datapoints"]) == len(points)
        ms = _measure(
            process, {"rest": lambda: rest.get(path, params=params), "boto": statistics}, args.requests
        )
    finally:
        hub.terminate()
        hub.wait(20)
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    print(f"hub: {' '.join(hub_cmd)} (SQLite, local storage, {args.requests} sequential requests each)")
    print(f"one metric, {args.points} samples at 100 ms; {len(points)} datapoints of 60 s per answer")
    print(f"REST GET …/metrics Average (anchor):        {ms['rest']:.3f} ms hub CPU per request")
    print(f"boto3 get_metric_statistics, 5 + 3 stats:   {ms['boto']:.3f} ms hub CPU (target < 50 ms)")


if __name__ == "__main__":
    main()
