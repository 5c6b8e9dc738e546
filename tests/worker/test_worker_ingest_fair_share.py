"""Fair share on the ingest queue: a huge job opens a window of its traces at a time
(``fanout.join_traces``) and a user holds at most ``jobs_per_user`` ingests (``claim.UserAtLimit``),
so another user's small job, sent later, is ingested while the huge one is still going."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from profilerhub_core.db.models import JobStatus
from profilerhub_core.storage import layout
from profilerhub_core.tasks import INGEST_JOB
from profilerhub_worker.ingest import IngestContext, ingest_job
from profilerhub_worker.ingest import read as read_module
from profilerhub_worker.ingest.claim import claim, next_of_user
from tests.support.hub import wait_for
from tests.support.jobs import job_row, make_job, pooled_ingest_worker, sdk_files

TRACE = "traces/torch-cpu/mlp_cpu_10steps.pt.trace.json"


def _files(shared_dir: Path, traces: list[str]) -> dict[str, bytes]:
    data = (shared_dir / TRACE).read_bytes()
    return sdk_files(steps=3) | {f"torch/{name}.pt.trace.json": data for name in traces}


@pytest.fixture
def leases(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def test_a_huge_job_sends_its_traces_a_window_at_a_time(
    ctx: IngestContext, leases: redis.Redis, shared_dir: Path
) -> None:
    """No trace task is sent while ``traces_per_job`` traces of the job are open (sent, not done).
    No worker takes the tasks here: the claim's task parses every trace itself."""
    done: list[int] = [0]
    real_put = ctx.store.put

    def put(key: str, data: bytes) -> None:
        real_put(key, data)
        if key.endswith(layout.PROGRESS):
            done.append(json.loads(data)["traces_done"])

    sent_at: list[tuple[int, int]] = []  # (trace sent, traces done when it was sent)
    windowed = dataclasses.replace(
        ctx, leases=leases, traces_per_job=2, enqueue=lambda name, *a: sent_at.append((a[2], done[-1]))
    )
    windowed.store.put = put  # type: ignore[method-assign]
    job_id, _ = make_job(ctx, _files(shared_dir, [f"rank_{i}" for i in range(5)]))
    assert ingest_job(job_id, windowed) == "Ready"
    assert [n for n, _ in sent_at] == [1, 2, 3, 4]  # trace 0 is the claim's own
    assert [n - at for n, at in sent_at] == [1, 1, 1, 1]  # never more than 2 open at once


def test_a_users_jobs_beyond_their_share_wait_and_start_as_one_ends(ctx: IngestContext) -> None:
    """With a share of one job per user, a second completed job of the same user is not claimed
    while the first is Processing; the first's end sends it again."""
    shared = dataclasses.replace(ctx, jobs_per_user=1)
    first, _ = make_job(ctx, sdk_files(steps=2))
    second, _ = make_job(ctx, sdk_files(steps=2))
    stamp = claim(shared, first)
    assert stamp is not None
    assert ingest_job(second, shared) == "waiting"
    assert job_row(ctx, second).status is JobStatus.InProgress
    assert next_of_user(shared, job_row(ctx, first).user_id) == []  # no room yet
    assert ingest_job(first, shared, stamp.isoformat()) == "Ready"  # its own claim, taken back
    assert (INGEST_JOB, second) in ctx.sent  # type: ignore[attr-defined]
    assert ingest_job(second, shared) == "Ready"


def test_the_reconciler_does_not_resend_a_job_waiting_for_its_owners_share(ctx: IngestContext) -> None:
    """A waiting job re-sent each reconcile would only wait again (and lengthen the queue an
    autoscaler reads); once its owner's ingest is over, the reconciler sends it."""
    from datetime import timedelta

    from profilerhub_core.db.models import utcnow
    from profilerhub_worker.ingest import reconcile_jobs
    from profilerhub_worker.ingest.claim import finish

    shared = dataclasses.replace(ctx, jobs_per_user=1, resend_after=timedelta(0))
    first, _ = make_job(ctx, sdk_files(steps=2))
    second, _ = make_job(ctx, sdk_files(steps=2))
    stamp = claim(shared, first)
    assert stamp is not None
    ctx.sent.clear()  # type: ignore[attr-defined]
    reconcile_jobs(shared, utcnow() + timedelta(seconds=1))
    assert (INGEST_JOB, second) not in ctx.sent  # type: ignore[attr-defined]
    assert finish(shared, first, stamp, JobStatus.Failed, failure_reason="ended")
    reconcile_jobs(shared, utcnow() + timedelta(seconds=1))
    assert (INGEST_JOB, second) in ctx.sent  # type: ignore[attr-defined]


def test_a_small_users_job_finishes_while_a_huge_job_of_another_user_is_still_ingesting(
    ctx: IngestContext,
    leases: redis.Redis,
    jobs_seed: Any,
    redis_url: str,
    shared_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three worker slots. Alice's huge job (8 traces) parses two at a time (its window), each held
    at a gate until the end; her second job waits its turn (one job per user). Bob's one-trace job,
    sent after both, is taken by the third slot and Ready while Alice's is still Processing. Then the
    gate opens: Alice's first job ends Ready and starts her second, which ends Ready too.

    Without the window, Alice's six other trace tasks would be queued ahead of Bob's job and take the
    third slot; without the share, her second job would."""
    jobs_seed.user("d1", "bob")
    gate = threading.Event()
    held: Counter[str] = Counter()
    real = read_module.load_trace

    def gated(path: Any, *args: Any) -> Any:
        if Path(path).name.startswith("rank_"):
            held[Path(path).name] += 1
            gate.wait(120)  # opened by the test; a failing test does not hang past this
        return real(path, *args)

    monkeypatch.setattr(read_module, "load_trace", gated)
    fair = dataclasses.replace(ctx, leases=leases, traces_per_job=2, jobs_per_user=1)
    huge, huge_place = make_job(ctx, _files(shared_dir, [f"rank_{i}" for i in range(8)]))
    second, _ = make_job(ctx, _files(shared_dir, ["rank_x"]))
    small, small_place = make_job(ctx, _files(shared_dir, ["bob"]), user="bob")
    try:
        with pooled_ingest_worker(fair, redis_url, monkeypatch, slots=3) as app:
            app.send_task(INGEST_JOB, args=[huge])
            wait_for(lambda: sum(held.values()) == 2, "two of the huge job's traces parsing", 60)
            app.send_task(INGEST_JOB, args=[second])
            app.send_task(INGEST_JOB, args=[small])
            wait_for(lambda: job_row(ctx, small).status is JobStatus.Ready, "the small job Ready", 60)
            assert job_row(ctx, huge).status is JobStatus.Processing
            assert job_row(ctx, second).status is JobStatus.InProgress  # waiting its owner's turn
            assert sum(held.values()) == 2  # nothing more of Alice's started meanwhile
            progress = json.loads(ctx.store.get(huge_place.processed_key(layout.PROGRESS)))
            stored = 8 * (shared_dir / TRACE).stat().st_size
            assert progress == {"traces_done": 0, "traces": 8, "bytes_done": 0, "bytes": stored}
            gate.set()
            wait_for(lambda: job_row(ctx, huge).status is JobStatus.Ready, "the huge job Ready", 120)
            wait_for(lambda: job_row(ctx, second).status is JobStatus.Ready, "her second job Ready", 60)
    finally:
        gate.set()
    assert sorted(held) == sorted([f"rank_{i}.pt.trace.json" for i in range(8)] + ["rank_x.pt.trace.json"])
    assert set(held.values()) == {1}  # each trace parsed once
    summary = json.loads(ctx.store.get(small_place.processed_key(layout.SUMMARY)))
    assert [t["file"] for t in summary["traces"]] == ["torch/bob.pt.trace.json"]
