"""Webhooks from the worker: a rule that turns IssuesFound live (or a job that ends) becomes one
signed delivery to a real HTTP server; 5xx answers are retried with backoff until the attempts
run out; an address the allow-list refuses fails the delivery; a stop_on rule records an
audited stop request."""

from __future__ import annotations

import json
import socket
from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa

from profilerhub_core.db.models import AuditEvent, DeliveryStatus, Job, WebhookDelivery
from profilerhub_core.records import domains, jobs, users, webhooks
from profilerhub_core.tasks import DELIVER_WEBHOOK
from profilerhub_core.webhooks import SIGNATURE_HEADER, verify
from profilerhub_worker.ingest import IngestContext, ingest_job
from profilerhub_worker.ingest.context import WebhookPolicy
from profilerhub_worker.ingest.live_rules import evaluate_live
from profilerhub_worker.webhooks import deliver
from tests.support.jobs import cpu_chunk, job_row, make_job
from tests.support.webhook_receiver import WebhookReceiver

T0 = 1_000_000_000_000
LOOPBACK = ("127.0.0.0/8",)


def _bottlenecked_job(ctx: IngestContext, stop_on: list[str] | None = None) -> str:
    files = {"job.json": json.dumps({"status": "InProgress", "start_ns": T0}).encode(),
             "system/000001.jsonl.gz": cpu_chunk(0, 20, 95.0)}  # fmt: skip
    job_id, _ = make_job(ctx, files, complete=False)
    with ctx.sessions() as session:
        row = session.get(Job, job_id)
        assert row is not None
        row.rules = [{"rule": "CPUBottleneck", "parameters": {"patience": 0}}]
        row.stop_on = stop_on
        session.commit()
    return job_id


def _hook(ctx: IngestContext, url: str, *, domain_wide: bool = False) -> str:
    """A webhook of alice (or of domain d1) at ``url``; its secret."""
    with ctx.sessions() as session:
        domain = domains.require_domain(session, "d1")
        owner = None if domain_wide else users.get_user(session, domain, "alice")
        _, secret = webhooks.create_webhook(
            session, domain, owner, url=url, events=webhooks.EVENTS, created_by="test",
            allowed_networks=LOOPBACK,
        )  # fmt: skip
        session.commit()
    return secret


def _loopback(ctx: IngestContext, **policy: Any) -> IngestContext:
    ctx.webhooks = WebhookPolicy(allowed_networks=LOOPBACK, backoff_s=0.5, **policy)
    return ctx


def _sent(ctx: IngestContext) -> list[str]:
    return [i for name, i in ctx.sent if name == DELIVER_WEBHOOK]  # type: ignore[attr-defined]


def _delivery(ctx: IngestContext, delivery_id: str) -> WebhookDelivery:
    with ctx.sessions() as session:
        row = session.get(WebhookDelivery, delivery_id)
        assert row is not None
        session.expunge(row)
        return row


def test_a_rule_turning_issues_found_live_reaches_the_webhook_signed_once(ctx: IngestContext) -> None:
    _loopback(ctx)
    with WebhookReceiver() as receiver:
        secret = _hook(ctx, receiver.url)
        domain_secret = _hook(ctx, receiver.url, domain_wide=True)
        job_id = _bottlenecked_job(ctx)
        assert evaluate_live(ctx, job_id) == "evaluated"
        sent = _sent(ctx)
        assert len(sent) == 2  # alice's webhook and the domain's
        assert [deliver(ctx, d).result for d in sent] == ["Delivered", "Delivered"]
        got = receiver.wait_for(2)
    for request in got:
        signature = request.headers[SIGNATURE_HEADER]
        assert verify(secret, request.body, signature) or verify(domain_secret, request.body, signature)
        assert not verify(secret, request.body + b" ", signature)  # a changed body does not verify
        body = json.loads(request.body)
        assert body["event"] == "rule.IssuesFound" and body["job"]["job_id"] == job_id
        assert body["rule"]["rule"] == "CPUBottleneck" and body["rule"]["status"] == "IssuesFound"
        assert body["rule"]["findings"] and body["rule"]["recommendation"]
        assert request.headers["X-ProfilerHub-Delivery"] in sent
    assert _delivery(ctx, sent[0]).attempts[0]["status_code"] == 200
    # Still IssuesFound at the next scan: announced once, not again.
    assert evaluate_live(ctx, job_id) == "evaluated"
    assert len(_sent(ctx)) == 2


def test_a_500_is_retried_with_backoff_and_then_delivered(ctx: IngestContext) -> None:
    _loopback(ctx)
    with WebhookReceiver(statuses=[500, 503]) as receiver:
        _hook(ctx, receiver.url)
        evaluate_live(ctx, _bottlenecked_job(ctx))
        (delivery_id,) = _sent(ctx)
        first, second = deliver(ctx, delivery_id), deliver(ctx, delivery_id)
        assert first.result == second.result == "retry"
        assert 0.25 <= first.countdown <= 0.5 and 0.5 <= second.countdown <= 1.0  # doubling, jittered
        assert _delivery(ctx, delivery_id).next_attempt_at is not None
        assert deliver(ctx, delivery_id).result == "Delivered"
        assert len(receiver.wait_for(3)) == 3
    row = _delivery(ctx, delivery_id)
    assert row.status is DeliveryStatus.Delivered and row.finished_at is not None
    assert [a["status_code"] for a in row.attempts] == [500, 503, 200]
    assert deliver(ctx, delivery_id).result == "skipped"  # a duplicate task sends nothing


def test_attempts_run_out_into_failed_and_a_4xx_is_not_retried(ctx: IngestContext) -> None:
    _loopback(ctx, max_attempts=2)
    with WebhookReceiver(statuses=[500, 500, 404]) as receiver:
        _hook(ctx, receiver.url)
        _hook(ctx, receiver.url, domain_wide=True)
        evaluate_live(ctx, _bottlenecked_job(ctx))
        first, second = _sent(ctx)
        assert deliver(ctx, first).result == "retry"
        assert deliver(ctx, first).result == "Failed"
        assert deliver(ctx, second).result == "Failed"  # the 404
    assert [a["status_code"] for a in _delivery(ctx, first).attempts] == [500, 500]
    assert _delivery(ctx, second).attempts[0]["error"].startswith("HTTP 404")


def test_an_address_the_allow_list_refuses_at_delivery_fails_it(ctx: IngestContext) -> None:
    with WebhookReceiver() as receiver:
        _hook(ctx, receiver.url)  # allowed when it was made; the operator has since narrowed the list
        ctx.webhooks = replace(ctx.webhooks, allowed_networks=())
        evaluate_live(ctx, _bottlenecked_job(ctx))
        (delivery_id,) = _sent(ctx)
        assert deliver(ctx, delivery_id).result == "Failed"
        assert receiver.received == []
    assert "not a public address" in _delivery(ctx, delivery_id).attempts[0]["error"]


def test_a_name_that_resolves_at_delivery_to_an_ipv6_form_of_loopback_is_refused(
    ctx: IngestContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # F4 at delivery: the name was public when the webhook was made; it now resolves to 6to4's
    # spelling of 127.0.0.1 (DNS rebinding), which ipaddress's is_global calls public.
    answers = {"rebound.example": "93.184.215.14"}

    def resolve(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        address = answers[host]
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    _hook(ctx, "http://rebound.example:9/hook")
    answers["rebound.example"] = "2002:7f00:1::1"
    ctx.webhooks = replace(ctx.webhooks, allowed_networks=())
    evaluate_live(ctx, _bottlenecked_job(ctx))
    (delivery_id,) = _sent(ctx)
    assert deliver(ctx, delivery_id).result == "Failed"
    error = _delivery(ctx, delivery_id).attempts[0]["error"]
    assert "'rebound.example' resolves to '2002:7f00:1::1', which is not a public address" in error


def test_a_stop_on_rule_records_an_audited_stop_request_once(ctx: IngestContext) -> None:
    stopping, running = _bottlenecked_job(ctx, ["CPUBottleneck"]), _bottlenecked_job(ctx)
    evaluate_live(ctx, stopping)
    evaluate_live(ctx, running)
    request = job_row(ctx, stopping).stop_request
    assert request["rule"] == "CPUBottleneck" and "datapoints" in request["reason"]
    assert job_row(ctx, running).stop_request is None  # not opted in
    with ctx.sessions() as session:
        audited = session.scalars(
            sa.select(AuditEvent).where(AuditEvent.action == "RequestStopTraining")
        ).all()
        assert [(e.target, e.detail["rule"]) for e in audited] == [(stopping, "CPUBottleneck")]


def test_a_job_that_ends_is_announced(ctx: IngestContext) -> None:
    _loopback(ctx)
    _hook(ctx, "http://127.0.0.1:9/unused")
    job_id = _bottlenecked_job(ctx)
    with ctx.sessions() as session:
        row = session.get(Job, job_id)
        assert row is not None
        jobs.mark_complete(session, row)
        session.commit()
    assert ingest_job(job_id, ctx) == "Ready"
    with ctx.sessions() as session:
        events = sorted(d.event for d in session.scalars(sa.select(WebhookDelivery)))
    assert events == ["job.Ready", "rule.IssuesFound"]  # the final evaluation found it first
