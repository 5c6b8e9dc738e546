"""Webhooks and their deliveries: create, list, delete; which webhooks an event of a job reaches;
the delivery rows a worker then sends (``profilerhub_worker.webhooks``).

A webhook belongs to a domain (every job there; its administrators manage it), to a user (every
job of theirs) or to one job of a user. Like every model function these flush; the caller commits,
and sends the delivery tasks after the commit.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from profilerhub_core.db.models import Domain, Job, UserProfile, Webhook, WebhookDelivery
from profilerhub_core.errors import InvalidInput, LimitExceeded, NotFound
from profilerhub_core.webhooks.addresses import AddressRefused, check_destination

RULE_ISSUES_FOUND = "rule.IssuesFound"
JOB_READY = "job.Ready"
JOB_FAILED = "job.Failed"
EVENTS = (RULE_ISSUES_FOUND, JOB_READY, JOB_FAILED)
MAX_WEBHOOKS = 20
"""Per domain (its domain-wide webhooks) and per user (theirs and their jobs')."""


def webhook_not_found(webhook_id: str) -> NotFound:
    return NotFound(f"Webhook '{webhook_id}' not found")


def check_url(url: str, allowed_networks: Sequence[str]) -> None:
    """``InvalidInput`` unless ``url`` may be called (``webhooks.addresses``)."""
    try:
        check_destination(url, allowed_networks)
    except AddressRefused as exc:
        raise InvalidInput(str(exc)) from None


def _owner_filter(domain: Domain, user: UserProfile | None) -> Any:
    owner = Webhook.user_id.is_(None) if user is None else Webhook.user_id == user.id
    return sa.and_(Webhook.domain_id == domain.id, owner)


def create_webhook(
    session: Session,
    domain: Domain,
    user: UserProfile | None,
    *,
    url: str,
    events: Sequence[str],
    created_by: str,
    allowed_networks: Sequence[str],
    job: Job | None = None,
    note: str = "",
) -> tuple[Webhook, str]:
    """A new webhook and its signing secret (shown once). ``user`` None: the domain's."""
    check_url(url, allowed_networks)
    count = session.scalar(sa.select(sa.func.count()).select_from(Webhook).where(_owner_filter(domain, user)))
    if (count or 0) >= MAX_WEBHOOKS:
        whose = f"user '{user.name}'" if user is not None else f"domain '{domain.name}'"
        raise LimitExceeded(f"The {whose} has {MAX_WEBHOOKS} webhooks already; delete one first")
    secret = "whsec_" + secrets.token_urlsafe(32)
    hook = Webhook(
        domain_id=domain.id,
        user_id=user.id if user is not None else None,
        job_id=job.id if job is not None else None,
        url=url,
        events=list(dict.fromkeys(events)),
        secret=secret,
        note=note,
        created_by=created_by,
    )
    session.add(hook)
    session.flush()
    return hook, secret


def webhooks_query(domain: Domain, user: UserProfile | None) -> sa.Select[Any]:
    """The domain's own webhooks (``user`` None) or the user's (theirs and their jobs')."""
    return sa.select(Webhook).where(_owner_filter(domain, user))


def require_webhook(session: Session, domain: Domain, user: UserProfile | None, webhook_id: str) -> Webhook:
    hook: Webhook | None = session.scalar(webhooks_query(domain, user).where(Webhook.id == webhook_id))
    if hook is None:
        raise webhook_not_found(webhook_id)
    return hook


def delete_webhook(session: Session, hook: Webhook) -> None:
    session.execute(sa.delete(WebhookDelivery).where(WebhookDelivery.webhook_id == hook.id))
    session.delete(hook)
    session.flush()


def deliveries_query(hook: Webhook) -> sa.Select[Any]:
    """The webhook's deliveries (unordered; paginate by created_at, id)."""
    return sa.select(WebhookDelivery).where(WebhookDelivery.webhook_id == hook.id)


def hooks_for(session: Session, job: Job, event: str) -> list[Webhook]:
    """Every webhook an ``event`` of ``job`` reaches: its domain's, its user's and its own."""
    stmt = sa.select(Webhook).where(
        Webhook.domain_id == job.domain_id,
        sa.or_(
            sa.and_(Webhook.user_id.is_(None), Webhook.job_id.is_(None)),
            sa.and_(Webhook.user_id == job.user_id, Webhook.job_id.is_(None)),
            Webhook.job_id == job.id,
        ),
    )
    return [hook for hook in session.scalars(stmt) if event in (hook.events or EVENTS)]


def add_deliveries(
    session: Session, job: Job, event: str, payload: dict[str, Any], *, key: str | None = None
) -> list[str]:
    """A Pending delivery of ``payload`` for each webhook ``event`` reaches; their ids (send
    ``DELIVER_WEBHOOK`` for each once committed). ``key``: once per webhook, whoever adds it: a
    webhook with a delivery of that key already gets none (the unique key holds when two
    workers add it at once)."""
    ids = []
    for hook in hooks_for(session, job, event):
        if key is not None and session.scalar(
            sa.select(WebhookDelivery.id).where(
                WebhookDelivery.webhook_id == hook.id, WebhookDelivery.dedupe_key == key
            )
        ):
            continue
        delivery = WebhookDelivery(
            webhook_id=hook.id, job_id=job.id, event=event, payload=payload, dedupe_key=key
        )
        try:
            with session.begin_nested():
                session.add(delivery)
        except IntegrityError:  # added meanwhile by another worker: theirs is the one
            continue
        ids.append(delivery.id)
    return ids


__all__ = [
    "EVENTS",
    "JOB_FAILED",
    "JOB_READY",
    "MAX_WEBHOOKS",
    "RULE_ISSUES_FOUND",
    "add_deliveries",
    "check_url",
    "create_webhook",
    "delete_webhook",
    "deliveries_query",
    "hooks_for",
    "require_webhook",
    "webhook_not_found",
    "webhooks_query",
]
