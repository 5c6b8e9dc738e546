"""A running ingest keeps a heartbeat on its claim: a dead worker's job is re-sent by the next
reconcile (not after the 15-minute limit), a live one is left alone, and a worker retrying with its
own claim does not spend an attempt."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from profilerhub_analysis.build import load_trace
from profilerhub_core.db.models import Job, JobStatus, utcnow
from profilerhub_core.tasks import INGEST_JOB
from profilerhub_worker.ingest import IngestContext, ingest_job, reconcile_jobs
from profilerhub_worker.ingest.claim import claim, heartbeat, worker_died
from profilerhub_worker.ingest.write import put_status
from tests.support.hub import wait_for
from tests.support.jobs import job_row, make_job, sdk_files

TRACE = "torch-cpu/mlp_cpu_10steps.pt.trace.json"


def _silence(ctx: IngestContext, job_id: str, seconds: int) -> None:
    """The heartbeat stopped ``seconds`` ago (the worker holding the claim was killed)."""
    with ctx.sessions() as session:
        session.execute(
            sa.update(Job)
            .where(Job.id == job_id)
            .values(ingest_heartbeat_at=utcnow() - timedelta(seconds=seconds))
        )
        session.commit()


def test_a_claim_whose_heartbeat_stopped_is_resent_by_the_next_reconcile_and_taken_over(
    ctx: IngestContext,
) -> None:
    job_id, _ = make_job(ctx, sdk_files())
    assert claim(ctx, job_id) is not None  # a worker claimed it, then died
    _silence(ctx, job_id, int(ctx.heartbeat_stale.total_seconds()) + 5)
    assert job_row(ctx, job_id).updated_at > utcnow() - ctx.stale_after  # far from the old limit

    assert reconcile_jobs(ctx)["resent"] == 1
    assert ctx.sent == [(INGEST_JOB, job_id)]  # type: ignore[attr-defined]
    assert ingest_job(job_id, ctx) == "Ready"
    row = job_row(ctx, job_id)
    assert (row.ingest_attempts, row.ingest_takeovers) == (1, 1)  # the worker's death is not an attempt


def test_a_job_that_kills_every_worker_is_failed_after_the_takeover_limit(ctx: IngestContext) -> None:
    job_id, _ = make_job(ctx, sdk_files())
    assert claim(ctx, job_id) is not None
    for _ in range(ctx.max_takeovers):
        _silence(ctx, job_id, int(ctx.heartbeat_stale.total_seconds()) + 5)
        assert claim(ctx, job_id) is not None  # taken over; its worker dies again
    _silence(ctx, job_id, int(ctx.heartbeat_stale.total_seconds()) + 5)
    assert claim(ctx, job_id) is None
    row = job_row(ctx, job_id)
    assert row.status is JobStatus.Failed and "died" in (row.failure_reason or "")
    assert row.ingest_attempts == 1


def test_a_live_claim_is_left_alone(ctx: IngestContext) -> None:
    job_id, _ = make_job(ctx, sdk_files())
    assert claim(ctx, job_id) is not None  # heartbeat fresh: its worker is busy with it
    assert reconcile_jobs(ctx)["resent"] == 0
    assert ingest_job(job_id, ctx) == "skipped"
    assert job_row(ctx, job_id).status is JobStatus.Processing


def test_retrying_with_its_own_claim_is_not_a_new_attempt(ctx: IngestContext) -> None:
    job_id, _ = make_job(ctx, sdk_files())
    stamp = claim(ctx, job_id)
    assert stamp is not None
    for _ in range(ctx.max_attempts + 2):  # storage hiccups: the task retries with its claim
        stamp = claim(ctx, job_id, resume=stamp.isoformat())
        assert stamp is not None
    assert job_row(ctx, job_id).ingest_attempts == 1
    assert ingest_job(job_id, ctx, stamp.isoformat()) == "Ready"


def test_the_heartbeat_is_refreshed_while_an_ingest_runs(ctx: IngestContext) -> None:
    job_id, _ = make_job(ctx, sdk_files())
    stamp = claim(ctx, job_id)
    assert stamp is not None
    ctx.heartbeat_every = timedelta(milliseconds=20)
    with heartbeat(ctx, job_id, stamp):
        wait_for(lambda: (job_row(ctx, job_id).ingest_heartbeat_at or stamp) > stamp, "a fresh heartbeat")


def test_a_claim_stays_live_while_its_worker_parses_a_large_file_under_the_gil(
    ctx: IngestContext, shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Parsing one large trace holds the GIL for seconds (one msgspec call), so the heartbeat
    # thread cannot beat meanwhile; here it never beats at all, and the parse is "slow" (1 kB/s).
    from profilerhub_worker.ingest import read, run

    ctx.heartbeat_every = timedelta(hours=1)
    ctx.slowest_parse_bytes_per_second = 1000.0
    trace = (shared_dir / "traces" / TRACE).read_bytes()
    job_id, _ = make_job(ctx, {**sdk_files(), "traces/rank0.pt.trace.json": trace})
    seen: dict[str, bool] = {}

    def taken_over_in(seconds: float) -> bool:
        """Whether a reconcile ``seconds`` from now would take the claim over from its worker."""
        return worker_died(ctx, job_row(ctx, job_id), utcnow() + timedelta(seconds=seconds))

    def parse(path: Path, max_bytes: int | None = None) -> Any:
        # A minute into this parse (far past three heartbeat periods), the claim is still live.
        seen["during"] = taken_over_in(60)
        return load_trace(path, max_bytes)

    def status(*args: Any, **kwargs: Any) -> None:
        # Once parsed, the claim's heartbeat is the present again: a death now is seen as before.
        seen["after"] = taken_over_in(ctx.heartbeat_stale.total_seconds() + 5)
        put_status(*args, **kwargs)

    monkeypatch.setattr(read, "load_trace", parse)
    monkeypatch.setattr(run, "put_status", status)
    assert ingest_job(job_id, ctx) == "Ready"
    assert seen == {"during": False, "after": True}
    row = job_row(ctx, job_id)
    assert (row.ingest_attempts, row.ingest_takeovers) == (1, 0)


def test_an_ingest_that_outlasts_heartbeats_keeps_its_claim_and_finishes(
    ctx: IngestContext, shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each beat used to move the row's updated_at (its onupdate), which is the claim's stamp: after
    # the first beat the claim was nobody's, and the ingest ended "lost" with the job Processing.
    from profilerhub_worker.ingest import read

    ctx.heartbeat_every = timedelta(milliseconds=20)
    trace = (shared_dir / "traces" / TRACE).read_bytes()
    job_id, _ = make_job(ctx, {**sdk_files(), "traces/rank0.pt.trace.json": trace})

    def parse(path: Path, max_bytes: int | None = None) -> Any:
        claimed = job_row(ctx, job_id).ingest_heartbeat_at
        wait_for(lambda: job_row(ctx, job_id).ingest_heartbeat_at > claimed, "a beat during the parse")
        return load_trace(path, max_bytes)

    monkeypatch.setattr(read, "load_trace", parse)
    assert ingest_job(job_id, ctx) == "Ready"
