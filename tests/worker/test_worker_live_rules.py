"""Rules on a running job, evaluated on what has streamed so far and only on chunks not read
before; a rule short of data is InProgress; a completed job is left to ingest."""

from __future__ import annotations

import json
from typing import Any

from profilerhub_analysis.series import extras
from profilerhub_core.db.models import Job
from profilerhub_core.records import jobs
from profilerhub_worker.ingest import IngestContext, ingest_job
from profilerhub_worker.ingest.live_rules import CACHE, evaluate_live, evaluate_running_jobs
from tests.support.jobs import cpu_chunk, job_row, jsonl_gz, make_job

T0 = 1_000_000_000_000
RULES = [
    {"rule": "CPUBottleneck", "parameters": {"patience": 0}},
    {"rule": "LowGPUUtilization", "parameters": {}},
]


def _running_job(ctx: IngestContext) -> tuple[str, Any]:
    files = {"job.json": json.dumps({"status": "InProgress", "start_ns": T0}).encode(),
             "system/000001.jsonl.gz": cpu_chunk(0, 20, 95.0)}  # fmt: skip
    job_id, place = make_job(ctx, files, complete=False)
    with ctx.sessions() as session:
        row = session.get(Job, job_id)
        assert row is not None
        row.rules = RULES
        session.commit()
    return job_id, place


def _cpu(results: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in results["rules"] if r["rule"] == "CPUBottleneck")


def test_a_running_job_is_evaluated_on_what_it_streamed(ctx: IngestContext) -> None:
    job_id, _ = _running_job(ctx)
    assert evaluate_live(ctx, job_id) == "evaluated"
    results = job_row(ctx, job_id).rule_results
    assert results["final"] is False and results["status"] == "IssuesFound"
    assert _cpu(results)["status"] == "IssuesFound" and _cpu(results)["figures"]["datapoints"] == 20
    gpu = next(r for r in results["rules"] if r["rule"] == "LowGPUUtilization")
    assert gpu["status"] == "InProgress" and "patience 1000" in gpu["reason"]


def test_only_new_chunks_are_read_and_the_earlier_ones_come_from_the_cache(ctx: IngestContext) -> None:
    job_id, place = _running_job(ctx)
    evaluate_live(ctx, job_id)
    ctx.store.delete(place.raw_key("system/000001.jsonl.gz"))  # were it read again, its 20 would be lost
    ctx.store.put(place.raw_key("system/000002.jsonl.gz"), cpu_chunk(20, 30, 20.0))
    assert evaluate_live(ctx, job_id) == "evaluated"
    cpu = _cpu(job_row(ctx, job_id).rule_results)
    assert cpu["figures"]["datapoints"] == 50 and cpu["figures"]["bottleneck_datapoints"] == 20
    assert cpu["status"] == "NoIssuesFound"  # 40 % of datapoints, not more than 50


def test_the_periodic_scan_waits_scan_interval_and_leaves_completed_jobs_to_ingest(
    ctx: IngestContext,
) -> None:
    job_id, place = _running_job(ctx)
    assert evaluate_running_jobs(ctx, scan_interval=60) == {"evaluated": 1, "skipped": 0}
    assert evaluate_running_jobs(ctx, scan_interval=60) == {"evaluated": 0, "skipped": 1}
    with ctx.sessions() as session:
        row = session.get(Job, job_id)
        assert row is not None
        jobs.mark_complete(session, row)
        session.commit()
    assert evaluate_live(ctx, job_id) == "skipped"
    assert ingest_job(job_id, ctx) == "Ready"
    final = job_row(ctx, job_id).rule_results
    assert final["final"] is True and _cpu(final)["figures"]["datapoints"] == 20
    assert not ctx.store.exists(place.processed_key("live/state.json"))  # ingest started afresh


WINDOWED = [
    {"rule": "LowGPUUtilization", "parameters": {"patience": 3, "window": 10, "threshold_p95": 90}},
    {"rule": "CPUBottleneck", "parameters": {"patience": 3}},
]


def _varied_chunk(first: int, n: int) -> bytes:
    """Samples ``first`` .. ``first + n`` at 100 ms, CPU and GPU 0 utilisation varying by sample."""
    return jsonl_gz(
        [{"ts_ns": T0 + (first + i) * 100_000_000, "cpu_percent": float((first + i) * 37 % 100),
          "gpus": [{"index": 0, "util_percent": float((first + i) * 53 % 100)}]} for i in range(n)]
    )  # fmt: skip


def _job_with(ctx: IngestContext, chunks: dict[str, bytes]) -> tuple[str, Any]:
    files = {"job.json": json.dumps({"status": "InProgress", "start_ns": T0}).encode(), **chunks}
    job_id, place = make_job(ctx, files, complete=False)
    with ctx.sessions() as session:
        row = session.get(Job, job_id)
        assert row is not None
        row.rules = WINDOWED
        session.commit()
    return job_id, place


def test_incremental_scans_give_what_a_full_scan_gives_also_when_a_late_chunk_sorts_in_earlier(
    ctx: IngestContext,
) -> None:
    arrivals = [
        {"system/000001.jsonl.gz": _varied_chunk(0, 25)},  # 2 full windows after patience, 1 partial
        {"system/000003.jsonl.gz": _varied_chunk(25, 8)},  # the partial one fills: a window's edge
        {"system/000004.jsonl.gz": _varied_chunk(33, 22)},  # ends half a window in
        {"system/000002.jsonl.gz": _varied_chunk(55, 5), "system/000000.jsonl.gz": _varied_chunk(-15, 15)},
        {"system/000005.jsonl.gz": _varied_chunk(60, 41)},  # after the late chunk: appended again
    ]
    job_id, place = _job_with(ctx, {})
    seen: dict[str, bytes] = {}
    for chunks in arrivals:
        for name, data in chunks.items():
            ctx.store.put(place.raw_key(name), data)
        seen |= chunks
        assert evaluate_live(ctx, job_id) == "evaluated"
        live = job_row(ctx, job_id).rule_results
        scratch_id, _ = _job_with(ctx, dict(seen))
        assert evaluate_live(ctx, scratch_id) == "evaluated"
        assert live["rules"] == job_row(ctx, scratch_id).rule_results["rules"], sorted(seen)
        assert live["rules"][0]["figures"]["gpu0"]["windows"] >= 2
        assert extras(ctx.store.get(place.processed_key(CACHE)))  # the full windows, kept for the next scan
