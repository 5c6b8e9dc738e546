"""A job's traces fanned out: one task per trace on any worker, joined by the task holding the claim
(``profilerhub_worker.ingest.fanout``), against the real Redis (leases) and real Celery workers."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from profilerhub_core.db.models import JobStatus
from profilerhub_core.storage import layout
from profilerhub_core.tasks import INGEST_JOB, INGEST_TRACE
from profilerhub_worker.ingest import IngestContext, claim, ingest_job
from profilerhub_worker.ingest import read as read_module
from profilerhub_worker.ingest.fanout import LEASE_PREFIX, help_with_trace
from tests.support.hub import wait_for
from tests.support.jobs import job_row, make_job, pooled_ingest_worker, sdk_files

TRACES = {
    "torch/host_1.1.pt.trace.json.gz": "traces/torch-cpu/mlp_cpu_10steps_stack.pt.trace.json.gz",
    "torch/host_1.2.pt.trace.json": "traces/torch-cpu/mlp_cpu_10steps.pt.trace.json",
    "torch/host_2.1.pt.trace.json.gz": "traces/hta/tests/data/trace_filter/sampled_rank-0.json.gz",
    "torch/host_2.2.pt.trace.json.gz": "traces/hta/tests/data/trace_filter/sampled_rank-1.json.gz",
}


def _files(shared_dir: Path) -> dict[str, bytes]:
    return sdk_files(steps=3) | {rel: (shared_dir / src).read_bytes() for rel, src in TRACES.items()}


@pytest.fixture
def leases(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each trace was parsed (by any worker of this process)."""
    seen: Counter[str] = Counter()
    real = read_module.load_trace

    def counting(path: Any, *args: Any) -> Any:
        seen[Path(path).name] += 1
        return real(path, *args)

    monkeypatch.setattr(read_module, "load_trace", counting)
    return seen


def _fanned(ctx: IngestContext, leases: redis.Redis, **changes: Any) -> IngestContext:
    return dataclasses.replace(ctx, leases=leases, **changes)


def _summary(ctx: IngestContext, place: Any) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads(ctx.store.get(place.processed_key(layout.SUMMARY)))
    return summary


def test_a_trace_is_parsed_by_whichever_task_takes_its_lease_while_the_claim_holds(
    ctx: IngestContext, leases: redis.Redis, shared_dir: Path, parsed: Counter[str]
) -> None:
    job_id, place = make_job(ctx, _files(shared_dir))
    fanned = _fanned(ctx, leases)
    stamp = claim(fanned, job_id)
    assert stamp is not None
    key = place.raw_key("torch/host_1.2.pt.trace.json")
    args = (job_id, stamp.isoformat(), 1, key, "torch/host_1.2.pt.trace.json")
    assert help_with_trace(fanned, *args) == "parsed"
    assert help_with_trace(fanned, *args) == "taken"  # its part is written: nobody parses it again
    assert help_with_trace(fanned, job_id, "2001-01-01T00:00:00", *args[2:]) == "stale"
    part = json.loads(ctx.store.get(place.processed_key(layout.trace_part(1))))
    assert part["rel"] == "torch/host_1.2.pt.trace.json" and part["entry"]["report"]["events"] > 1000
    assert ctx.store.exists(place.processed_key("traces/1-host_1.2.pt.trace/timeline/done"))
    assert parsed == {"host_1.2.pt.trace.json": 1}
    assert not leases.keys(f"{LEASE_PREFIX}{job_id}:*")  # let go once done


def test_a_trace_whose_worker_died_holding_it_is_parsed_again_alone_by_the_claims_task(
    ctx: IngestContext, leases: redis.Redis, shared_dir: Path, parsed: Counter[str]
) -> None:
    """The task for trace 2 takes its lease and dies (no part, no release); every other trace's task
    never runs. The claim's task parses the others, waits for that lease to lapse, then parses it:
    each trace once, the job Ready once, its summary the one a job read in one task gets."""
    sent: list[tuple[Any, ...]] = []

    def enqueue(name: str, *args: Any) -> None:
        sent.append((name, *args))
        if name == INGEST_TRACE and args[2] == 2:  # a worker takes trace 2 ... and is killed
            leases.set(f"{LEASE_PREFIX}{args[0]}:{args[1]}:2", "dead", nx=True, px=1500)

    fanned = _fanned(ctx, leases, enqueue=enqueue, heartbeat_stale=timedelta(seconds=1))
    job_id, place = make_job(ctx, _files(shared_dir))
    assert ingest_job(job_id, fanned) == "Ready"
    assert [s[3] for s in sent if s[0] == INGEST_TRACE] == [1, 2, 3]  # trace 0: the claim's own
    assert sorted(parsed.values()) == [1, 1, 1, 1]
    stored = sum(len(data) for rel, data in _files(shared_dir).items() if rel in TRACES)
    progress = json.loads(ctx.store.get(place.processed_key(layout.PROGRESS)))
    assert progress == {"traces_done": 4, "traces": 4, "bytes_done": stored, "bytes": stored}
    assert ingest_job(job_id, fanned) == "skipped"  # Ready once

    alone_id, alone_place = make_job(ctx, _files(shared_dir))
    assert ingest_job(alone_id, ctx) == "Ready"  # no leases: one task, one trace after another
    fanned_summary, alone_summary = _summary(ctx, place), _summary(ctx, alone_place)
    assert fanned_summary["traces"] == alone_summary["traces"]
    assert len(fanned_summary["traces"]) == 4 and fanned_summary["warnings"] == []
    assert job_row(ctx, job_id).summary == job_row(ctx, alone_id).summary


def test_real_workers_ingest_a_jobs_traces_as_tasks_of_their_own(
    ctx: IngestContext,
    leases: redis.Redis,
    redis_url: str,
    shared_dir: Path,
    parsed: Counter[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: Counter[str] = Counter()
    real = read_module.load_trace

    def noting(path: Any, *args: Any) -> Any:
        threads[threading.current_thread().name] += 1
        return real(path, *args)

    monkeypatch.setattr(read_module, "load_trace", noting)
    fanned = _fanned(ctx, leases)
    job_id, place = make_job(ctx, _files(shared_dir))
    with pooled_ingest_worker(fanned, redis_url, monkeypatch, slots=2) as app:
        app.send_task(INGEST_JOB, args=[job_id])
        wait_for(lambda: job_row(ctx, job_id).status is JobStatus.Ready, "the fanned-out job Ready", 120)
    summary = _summary(ctx, place)
    assert [t["file"] for t in summary["traces"]] == list(TRACES)
    assert sum(threads.values()) == 4  # each trace parsed once, by one of the two slots
    print("traces parsed per worker thread:", dict(threads))
    assert json.loads(ctx.store.get(place.processed_key(layout.PROGRESS)))["traces_done"] == 4
