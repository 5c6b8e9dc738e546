"""A distributed run's rank jobs kept in step: when a later rank's data trips a tensor rule after
rank 0's job was evaluated, rank 0's job is evaluated again at once, live (its results and its
stop request, in the scan that read rank 1's data) and once Ready (when rank 1 ends later). The
finding, seen on both rank jobs, reaches each webhook once (a real HTTP receiver), with its ranks."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from profilerhub_analysis.tensor_records import record
from profilerhub_core.db.models import Job, WebhookDelivery
from profilerhub_core.errors import Unavailable
from profilerhub_core.outage import STORAGE
from profilerhub_core.records import domains, jobs, users, webhooks
from profilerhub_core.storage import LocalStore, layout
from profilerhub_core.tasks import DELIVER_WEBHOOK
from profilerhub_worker.ingest import IngestContext, ingest_job
from profilerhub_worker.ingest.actions import act_on_rules
from profilerhub_worker.ingest.context import WebhookPolicy
from profilerhub_worker.ingest.live_rules import evaluate_live, evaluate_running_jobs
from profilerhub_worker.webhooks import deliver
from tests.support.jobs import cpu_chunk, job_row, jsonl_gz, make_job
from tests.support.webhook_receiver import WebhookReceiver

T0 = 1_000_000_000_000
RULE = webhooks.RULE_ISSUES_FOUND
STEP_NS = 100_000_000


def _chunk(rank: int, steps: range, nan_at: int | None = None) -> bytes:
    """A ``tensors/`` chunk of one rank: a gradient and the loss at ``steps``, the loss NaN at
    ``nan_at``."""
    rng = np.random.default_rng(rank)
    out = []
    for s in steps:
        loss = np.array(np.nan if s == nan_at else 1.0 / (s + 1))
        tensors = {"gradients/fc.weight": rng.normal(size=(4, 4)), "losses/loss": loss}
        out.append(record("train", s, tensors, rank=rank, ts_ns=T0 + s * STEP_NS))
    return jsonl_gz(out)


def _rank_job(ctx: IngestContext, rank: int, chunk: bytes) -> tuple[str, Any]:
    doc = {"status": "InProgress", "start_ns": T0, "rank": rank, "world_size": 2, "run_id": "run-a"}
    files = {"job.json": json.dumps(doc).encode(), "system/000001.jsonl.gz": cpu_chunk(0, 10, 20.0),
             "tensors/000000.jsonl.gz": chunk}  # fmt: skip
    job_id, place = make_job(ctx, files, complete=False)
    with ctx.sessions() as session:
        row = session.get(Job, job_id)
        assert row is not None
        row.rules, row.stop_on = ["ExplodingTensor"], ["ExplodingTensor"]
        session.commit()
    return job_id, place


def _hooks(ctx: IngestContext, url: str) -> None:
    """alice's webhook and the domain's at ``url``, for rule.IssuesFound."""
    ctx.webhooks = WebhookPolicy(allowed_networks=("127.0.0.0/8",), backoff_s=0.5)
    with ctx.sessions() as session:
        domain = domains.require_domain(session, "d1")
        for owner in (users.get_user(session, domain, "alice"), None):
            webhooks.create_webhook(session, domain, owner, url=url, events=[RULE], created_by="test",
                                    allowed_networks=("127.0.0.0/8",))  # fmt: skip
        session.commit()


def _exploding(ctx: IngestContext, job_id: str) -> dict[str, Any]:
    return next(r for r in job_row(ctx, job_id).rule_results["rules"] if r["rule"] == "ExplodingTensor")


def _complete(ctx: IngestContext, job_id: str) -> None:
    with ctx.sessions() as session:
        row = session.get(Job, job_id)
        assert row is not None
        jobs.mark_complete(session, row)
        session.commit()


@pytest.fixture
def run(ctx: IngestContext) -> dict[int, tuple[str, Any]]:
    """Two rank jobs of one run, both healthy so far and both evaluated live."""
    ranks = {r: _rank_job(ctx, r, _chunk(r, range(3))) for r in (0, 1)}
    assert evaluate_running_jobs(ctx, scan_interval=60) == {"evaluated": 2, "skipped": 0}
    for job_id, _ in ranks.values():
        assert _exploding(ctx, job_id)["status"] != "IssuesFound"
    return ranks


def test_a_later_ranks_nan_reaches_rank_0s_job_and_its_stop_request_in_the_same_scan(
    ctx: IngestContext, run: dict[int, tuple[str, Any]]
) -> None:
    (zero, _), (one, place_one) = run[0], run[1]
    ctx.store.put(place_one.raw_key("tensors/000001.jsonl.gz"), _chunk(1, range(3, 6), nan_at=4))
    assert evaluate_live(ctx, one) == "evaluated"  # rank 1's own scan; rank 0's is not due for 60 s
    for job_id in (one, zero):
        exploding = _exploding(ctx, job_id)
        assert exploding["status"] == "IssuesFound", exploding
        assert exploding["reason"].startswith("at step 4:"), exploding
        assert {f["figures"]["rank"] for f in exploding["findings"]} == {1}
        assert job_row(ctx, job_id).stop_request["rule"] == "ExplodingTensor"
    assert json.loads(ctx.store.get(run[0][1].processed_key(layout.RULES)))["status"] == "IssuesFound"
    assert evaluate_running_jobs(ctx, scan_interval=60) == {"evaluated": 0, "skipped": 2}


def test_rank_0_ready_first_is_evaluated_again_when_rank_1_ends_with_a_nan(
    ctx: IngestContext, run: dict[int, tuple[str, Any]]
) -> None:
    (zero, place_zero), (one, place_one) = run[0], run[1]
    _complete(ctx, zero)
    assert ingest_job(zero, ctx) == "Ready"
    assert _exploding(ctx, zero)["status"] == "NoIssuesFound"  # rank 1 healthy so far
    ctx.store.put(place_one.raw_key("tensors/000001.jsonl.gz"), _chunk(1, range(3, 6), nan_at=5))
    _complete(ctx, one)
    assert ingest_job(one, ctx) == "Ready"
    for job_id, place in ((one, place_one), (zero, place_zero)):
        exploding = _exploding(ctx, job_id)
        assert exploding["status"] == "IssuesFound", exploding
        assert exploding["reason"].startswith("at step 5:"), exploding
        assert {f["figures"]["rank"] for f in exploding["findings"]} == {1}
        stored = json.loads(ctx.store.get(place.processed_key(layout.RULES)))
        assert stored["final"] and stored["status"] == "IssuesFound"
    assert job_row(ctx, zero).rule_results["status"] == "IssuesFound"
    assert job_row(ctx, zero).stop_request is None  # it had ended: nothing to stop


def test_a_finding_on_both_rank_jobs_posts_one_webhook_per_webhook_with_its_ranks(
    ctx: IngestContext, run: dict[int, tuple[str, Any]]
) -> None:
    (zero, _), (one, place_one) = run[0], run[1]
    with WebhookReceiver() as receiver:
        _hooks(ctx, receiver.url)
        ctx.store.put(place_one.raw_key("tensors/000001.jsonl.gz"), _chunk(1, range(3, 6), nan_at=4))
        assert evaluate_live(ctx, one) == "evaluated"  # rank 1 finds it, then rank 0's job does
        assert _exploding(ctx, zero)["status"] == "IssuesFound"
        # Another worker announcing it for rank 0 at the same time finds the keys taken.
        assert act_on_rules(ctx, zero, None, job_row(ctx, zero).rule_results) == 0
        for job_id in (zero, one):
            _complete(ctx, job_id)
            assert ingest_job(job_id, ctx) == "Ready"
        sent = [i for name, i in ctx.sent if name == DELIVER_WEBHOOK]  # type: ignore[attr-defined]
        assert len(sent) == 2
        assert [deliver(ctx, d).result for d in sent] == ["Delivered", "Delivered"]
        got = [json.loads(r.body) for r in receiver.received]
    assert len(got) == 2  # one per webhook, not one per rank job
    for body in got:
        assert body["rule"]["rule"] == "ExplodingTensor" and body["rule"]["ranks"] == [1]
        assert body["job"]["job_id"] == one and body["final"] is False
        assert body["run"]["world_size"] == 2
        assert body["run"]["jobs"] == [{"rank": 0, "job_id": zero}, {"rank": 1, "job_id": one}]
    with ctx.sessions() as session:
        keys = session.scalars(sa.select(WebhookDelivery.dedupe_key).where(WebhookDelivery.event == RULE))
        assert len(set(keys)) == 1


class _NoJobJson(LocalStore):
    """A local store whose ``job.json`` files cannot be read (a storage outage for them)."""

    def get(self, key: str) -> bytes:
        if key.endswith("/job.json"):
            raise Unavailable("storage does not answer")
        return super().get(key)


def test_a_finding_is_still_delivered_when_the_runs_rank_jobs_cannot_be_read(
    ctx: IngestContext, run: dict[int, tuple[str, Any]]
) -> None:
    one, place_one = run[1]
    _hooks(ctx, "http://127.0.0.1:9/hook")
    ctx.store.put(place_one.raw_key("tensors/000001.jsonl.gz"), _chunk(1, range(3, 6), nan_at=4))
    ctx.store = _NoJobJson(ctx.store.root)  # type: ignore[attr-defined]  # the same objects, job.json unreadable
    try:
        assert evaluate_live(ctx, one) == "evaluated"  # its own series: the other rank's left out
    finally:
        STORAGE.recovered()  # the process's one storage tracker: up for the tests after
    assert _exploding(ctx, one)["status"] == "IssuesFound"
    with ctx.sessions() as session:
        rows = session.scalars(sa.select(WebhookDelivery).where(WebhookDelivery.job_id == one)).all()
    assert len(rows) == 2 and all("run" not in r.payload for r in rows)  # announced as the job's own
