"""Ingest as a plain function, on SQLite and PostgreSQL with the local store: real shared traces and
SDK-shaped raw files in, event stores and a summary out; bad files fail only their own job."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from profilerhub_core.db.models import Job, JobStatus, utcnow
from profilerhub_core.errors import Unavailable
from profilerhub_core.tasks import INGEST_JOB
from profilerhub_worker.ingest import IngestContext, IngestInterrupted, ingest_job, reconcile_jobs
from tests.support.hub import wait_for
from tests.support.jobs import ingest_worker, make_job, sdk_files

CPU_TRACE = "traces/torch-cpu/mlp_cpu_10steps_stack.pt.trace.json.gz"
GPU_TRACE = "traces/hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"


def job_row(ctx: IngestContext, job_id: str) -> Job:
    with ctx.sessions() as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job


def test_ingest_turns_sdk_files_and_a_trace_into_event_stores_and_a_summary(
    ctx: IngestContext, shared_dir: Path
) -> None:
    files = sdk_files(steps=5) | {"torch/host_1.1.pt.trace.json.gz": (shared_dir / CPU_TRACE).read_bytes()}
    job_id, place = make_job(ctx, files)

    assert ingest_job(job_id, ctx) == "Ready"

    summary = json.loads(ctx.store.get(place.processed_key("summary.json")))
    assert summary["steps"]["count"] == 5
    assert [s["dur_ms"] for s in summary["steps"]["items"]] == [18.0, 19.0, 20.0, 21.0, 22.0]
    assert {a["name"]: a["count"] for a in summary["annotations"]} == {"backward": 5, "forward": 5}
    backward = summary["annotations"][0]
    assert {k: v for k, v in backward.items() if k != "histogram"} == {
        "name": "backward",
        "count": 5,
        "total_ms": 50.0,
        "mean_ms": 10.0,
        "max_ms": 10.0,
    }
    assert sum(backward["histogram"]["counts"]) == 5 and backward["histogram"]["edges_us"][0] == 10_000.0
    loss = summary["metrics"]["train:loss"]
    assert loss["count"] == 5 and loss["last"] == pytest.approx(0.4) and loss["series"][0] == [0, 2.0]
    assert len(loss["time_series"]) == 5 and loss["time_series"][0][1] == 2.0
    assert summary["metrics"]["train:acc"]["nonfinite"] == 1
    cpu = summary["system"]["metrics"]["cpu_percent"]
    assert (cpu["min"], cpu["max"]) == (0.0, 40.0) and len(cpu["series"]) == 5
    assert summary["system"]["metrics"]["cpu1_percent"]["max"] == 60.0
    (trace,) = summary["traces"]
    ops = {op["name"] for op in trace["ops"]}
    assert {"aten::linear", "aten::addmm"} <= ops
    assert trace["report"]["x_events"] > 0
    stored = {info.key.rsplit("/processed/", 1)[1] for info in ctx.store.list(place.processed_prefix)}
    folder = trace["timeline"].removeprefix("processed/").removesuffix("timeline/")
    assert {f"{folder}dashboard.json", f"{folder}timeline/done"} <= stored
    assert not [key for key in stored if key.endswith(".parquet")]  # the event store is not kept

    row = job_row(ctx, job_id)
    assert row.status is JobStatus.Ready and row.summary is not None
    assert row.summary["steps"]["count"] == 5 and "series" not in row.summary["metrics"]["train:loss"]
    assert "time_series" not in row.summary["metrics"]["train:loss"]


def test_ingest_reports_kernels_and_launch_latency_of_a_gpu_trace(
    ctx: IngestContext, shared_dir: Path
) -> None:
    job_id, place = make_job(ctx, {"torch/alexnet.json.gz": (shared_dir / GPU_TRACE).read_bytes()})
    assert ingest_job(job_id, ctx) == "Ready"
    (trace,) = json.loads(ctx.store.get(place.processed_key("summary.json")))["traces"]
    assert trace["report"]["kernel_count"] > 0
    assert trace["report"]["launch_latency"]["count"] > 0
    # the list's figures land on the row too (the owner's job list sorts by them in SQL), the same
    # as the status file the app reads
    from profilerhub_core.storage.layout import STATUS

    facts = json.loads(ctx.store.get(place.processed_key(STATUS)))["facts"]
    row = job_row(ctx, job_id)
    assert (row.duration_s, row.steps, row.gpus, row.ranks) == (
        facts["duration_s"],
        facts["steps"],
        facts["gpus"],
        facts["ranks"],
    )
    assert row.duration_s is not None and row.duration_s > 0 and row.gpus >= 1 and row.ranks == 1


def test_ingest_reads_tensorflow_traces_in_their_plugin_layout(ctx: IngestContext) -> None:
    from tests.analysis.test_tensorflow import REAL_CPU_TRACE
    from tests.analysis.tfgen import encode, one_step

    run = "torch/logs/plugins/profile/2026_12_01_10_00_00"  # as `profilerhub upload LOGDIR --job` sends it
    files = {
        f"{run}/gpu0.trace.json.gz": gzip.compress(encode(one_step())),  # synthetic GPU trace
        f"{run}/gpu0.xplane.pb": b"\x0a\x00",  # TF writes it beside: not a trace
        "torch/cpu/plugins/profile/2026_12_01_19_29_58/vm.trace.json.gz": REAL_CPU_TRACE.read_bytes(),
    }
    job_id, place = make_job(ctx, files)
    assert ingest_job(job_id, ctx) == "Ready"
    summary = json.loads(ctx.store.get(place.processed_key("summary.json")))
    assert summary["warnings"] == []
    cpu, gpu = sorted(summary["traces"], key=lambda t: t["report"]["kernel_count"])
    assert gpu["report"]["kernel_count"] == 2 and gpu["report"]["kernel_time_us"] == 25.0
    assert gpu["report"]["launch_latency"]["count"] == 3
    assert cpu["report"]["x_events"] == 1121 and cpu["report"]["kernel_count"] == 0
    assert job_row(ctx, job_id).gpus == 1


def test_ingest_writes_dashboard_panels_and_a_mappable_timeline_per_trace(
    ctx: IngestContext, shared_dir: Path, tmp_path: Path
) -> None:
    from profilerhub_analysis.timeline.bundle import TraceTimeline

    job_id, place = make_job(ctx, {"torch/alexnet.json.gz": (shared_dir / GPU_TRACE).read_bytes()})
    assert ingest_job(job_id, ctx) == "Ready"
    (trace,) = json.loads(ctx.store.get(place.processed_key("summary.json")))["traces"]
    panels = json.loads(ctx.store.get(place.processed_key(trace["dashboard"].removeprefix("processed/"))))
    assert panels["gpu_active"]["active_us"] > 0 and panels["op_totals"]["name"]
    keys = [
        i.key for i in ctx.store.list(place.processed_prefix + trace["timeline"].removeprefix("processed/"))
    ]
    assert any(k.endswith("/timeline/done") for k in keys) and any(k.endswith("/lanes.json") for k in keys)
    for key in keys:
        (tmp_path / key.rsplit("/", 1)[1]).write_bytes(ctx.store.get(key))
    timeline = TraceTimeline.open(tmp_path)
    assert timeline.lanes["events"] == trace["report"]["x_events"]
    assert timeline.search("Memcpy")["total"] > 0


def test_a_duplicate_or_late_task_does_nothing(ctx: IngestContext) -> None:
    job_id, place = make_job(ctx, sdk_files())
    assert ingest_job(job_id, ctx) == "Ready"
    first = ctx.store.head(place.processed_key("summary.json"))
    assert ingest_job(job_id, ctx) == "skipped"
    assert ctx.store.head(place.processed_key("summary.json")) == first
    unfinished, _ = make_job(ctx, sdk_files(), complete=False)
    assert ingest_job(unfinished, ctx) == "skipped"
    assert ingest_job("no-such-job", ctx) == "skipped"


def _truncated() -> bytes:
    data = gzip.compress(json.dumps({"traceEvents": [{"ph": "X"}] * 2000}).encode())
    return data[: len(data) // 2]


BAD_FILES = [
    ("torch/t.pt.trace.json.gz", _truncated(), "raw/torch/t.pt.trace.json.gz: gzip data is truncated"),
    ("torch/t.pt.trace.json", b"{not json", "raw/torch/t.pt.trace.json: not valid JSON"),
    ("torch/t.pt.trace.json", b'{"hello": 1}', "raw/torch/t.pt.trace.json: no 'traceEvents' list"),
    ("annotations/000002.jsonl.gz", b"plain text", "raw/annotations/000002.jsonl.gz"),
    ("metrics/000002.jsonl.gz", gzip.compress(b'{"name": 3}\n'), "raw/metrics/000002.jsonl.gz"),
    ("job.json", b"[1, 2]", "raw/job.json: not a JSON object"),
    (
        "torch/huge.json",
        b" " * (5 << 20),
        "raw/torch/huge.json: 5242880 bytes is over the per-file limit",
    ),
]
BAD_IDS = [
    "truncated-gzip",
    "not-json",
    "not-a-trace",
    "chunk-not-gzip",
    "wrong-record",
    "job-json",
    "oversized",
]


@pytest.mark.parametrize(("name", "data", "reason"), BAD_FILES, ids=BAD_IDS)
def test_an_unreadable_file_is_left_out_with_a_warning_and_the_rest_is_ready(
    ctx: IngestContext, name: str, data: bytes, reason: str
) -> None:
    job_id, place = make_job(ctx, sdk_files() | {name: data})

    assert ingest_job(job_id, ctx) == "Ready"

    row = job_row(ctx, job_id)
    assert row.summary is not None and len(row.summary["warnings"]) == 1
    assert row.summary["warnings"][0].startswith(reason), row.summary["warnings"]
    summary = json.loads(ctx.store.get(place.processed_key("summary.json")))
    assert summary["warnings"] == row.summary["warnings"]
    assert summary["steps"]["count"] == 5 and summary["metrics"]["train:loss"]["count"] == 5
    assert len(list(ctx.store.list(place.raw_prefix))) == len(sdk_files()) + (name not in sdk_files())


@pytest.mark.parametrize(("name", "data", "reason"), BAD_FILES, ids=BAD_IDS)
def test_a_job_with_nothing_readable_fails_with_the_files_reason(
    ctx: IngestContext, name: str, data: bytes, reason: str
) -> None:
    bad_id, bad_place = make_job(ctx, {name: data})
    good_id, _ = make_job(ctx, sdk_files())

    assert ingest_job(bad_id, ctx) == "Failed"
    assert ingest_job(good_id, ctx) == "Ready"

    bad = job_row(ctx, bad_id)
    assert bad.status is JobStatus.Failed and bad.failure_reason is not None
    assert bad.failure_reason.startswith(reason), bad.failure_reason
    status = json.loads(ctx.store.get(bad_place.processed_key("status.json")))
    assert status["status"] == "Failed" and status["failure_reason"] == bad.failure_reason
    assert [i.key for i in ctx.store.list(bad_place.processed_prefix)] == [
        bad_place.processed_key("status.json")
    ]


def test_a_job_without_files_fails(ctx: IngestContext) -> None:
    job_id, _ = make_job(ctx, {})
    assert ingest_job(job_id, ctx) == "Failed"
    assert job_row(ctx, job_id).failure_reason == "No raw files were uploaded for this job"


def _age_claim(ctx: IngestContext, job_id: str, minutes: int) -> None:
    with ctx.sessions() as session:
        old = utcnow() - timedelta(minutes=minutes)
        session.execute(sa.update(Job).where(Job.id == job_id).values(updated_at=old))
        session.commit()


def test_a_job_whose_worker_died_is_reclaimed_once_stale_then_failed_after_max_attempts(
    ctx: IngestContext,
) -> None:
    from profilerhub_worker.ingest import claim

    job_id, _ = make_job(ctx, sdk_files())
    assert claim(ctx, job_id) is not None  # a worker took it ... and died
    assert ingest_job(job_id, ctx) == "skipped"  # its redelivered task: the claim is still fresh
    _age_claim(ctx, job_id, 10)
    assert reconcile_jobs(ctx) == {"resent": 1, "partial": 0, "abandoned": 0}
    assert ctx.sent == [(INGEST_JOB, job_id)]  # type: ignore[attr-defined]
    assert ingest_job(job_id, ctx) == "Ready"  # second attempt

    other, _ = make_job(ctx, sdk_files())
    for _ in range(2):  # two attempts die
        assert claim(ctx, other) is not None
        _age_claim(ctx, other, 10)
    assert ingest_job(other, ctx) == "skipped"
    row = job_row(ctx, other)
    assert row.status is JobStatus.Failed and "did not finish after 2 attempts" in (row.failure_reason or "")
    assert row.ingest_attempts == 2 and job_row(ctx, job_id).ingest_attempts == 2  # counted on the row


def test_a_storage_failure_keeps_the_claim_and_the_retry_finishes(
    ctx: IngestContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id, _ = make_job(ctx, sdk_files())
    real_put = ctx.store.put

    def down(*args: Any, **kwargs: Any) -> int:
        raise Unavailable("storage is down")

    monkeypatch.setattr(ctx.store, "put", down)
    with pytest.raises(IngestInterrupted) as interrupted:
        ingest_job(job_id, ctx)
    assert job_row(ctx, job_id).status is JobStatus.Processing
    assert ingest_job(job_id, ctx) == "skipped"  # without the claim: someone else's work
    monkeypatch.setattr(ctx.store, "put", real_put)
    assert ingest_job(job_id, ctx, interrupted.value.claim) == "Ready"


def test_the_reconciler_resends_completed_jobs_nobody_took(ctx: IngestContext) -> None:
    job_id, _ = make_job(ctx, sdk_files())
    make_job(ctx, sdk_files(), complete=False)  # still uploading: left alone
    # Just completed: its task may be on its way.
    assert reconcile_jobs(ctx) == {"resent": 0, "partial": 0, "abandoned": 0}
    with ctx.sessions() as session:
        old = utcnow() - timedelta(minutes=2)
        session.execute(sa.update(Job).where(Job.id == job_id).values(completed_at=old))
        session.commit()
    assert reconcile_jobs(ctx) == {"resent": 1, "partial": 0, "abandoned": 0}
    assert ctx.sent == [(INGEST_JOB, job_id)]  # type: ignore[attr-defined]


def test_a_real_worker_retries_a_storage_failure_with_its_claim(
    ctx: IngestContext, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Celery task on a real worker (in a thread) and the real Redis: the first write fails,
    the task retries with its claim and the job ends Ready."""
    job_id, _ = make_job(ctx, sdk_files())
    real_put, calls = ctx.store.put, []

    def flaky(*args: Any, **kwargs: Any) -> int:
        calls.append(args[0])
        if len(calls) == 1:
            raise Unavailable("storage is down")
        return real_put(*args, **kwargs)

    monkeypatch.setattr(ctx.store, "put", flaky)
    with ingest_worker(ctx, redis_url, monkeypatch) as app:
        app.send_task(INGEST_JOB, args=[job_id])
        wait_for(lambda: job_row(ctx, job_id).status is JobStatus.Ready, "the job Ready after a retry", 30)
    assert len(calls) > 1 and "processed/" in calls[0]
