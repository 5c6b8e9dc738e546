"""Delivering one webhook event: ``deliver(ctx, delivery_id)``, called by the Celery task.

    Pending ──► Delivered          a 2xx answer
       │  ▲
       │  └── retry                no answer, a timeout, 408, 429 or 5xx, while attempts are left:
       │                           the task runs again after ``backoff × 2^(n-1)`` seconds
       │                           (at most an hour, with jitter)
       └────► Failed               any other answer, the last attempt spent, or an address the
                                   allow-list refuses (``profilerhub_core.webhooks.addresses``)

Each attempt is appended to the row's ``attempts`` with a compare-and-set on the number of
attempts before it, so a task delivered twice logs (and sends) once. The body is the payload as
JSON, signed (``profilerhub_core.webhooks.signing``); the request goes to the address that was
checked, with the host name kept for ``Host`` and TLS, and redirects are not followed.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from profilerhub_core.db.models import DeliveryStatus, Webhook, WebhookDelivery, utcnow
from profilerhub_core.webhooks import AddressRefused, check_destination, sign
from profilerhub_core.webhooks.signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER
from profilerhub_worker.ingest.context import IngestContext, WebhookPolicy

MAX_BACKOFF_S = 3600.0
_RETRY_STATUS = frozenset({408, 429})


@dataclass(frozen=True)
class Outcome:
    """What one call did: ``Delivered``, ``Failed``, ``retry`` (after ``countdown`` s) or ``skipped``."""

    result: str
    countdown: float = 0.0


def backoff(policy: WebhookPolicy, attempts: int) -> float:
    """Seconds before attempt ``attempts + 1``: doubling from ``policy.backoff_s``, with jitter."""
    base = min(MAX_BACKOFF_S, policy.backoff_s * 2 ** max(0, attempts - 1))
    return base * (0.5 + random.random() / 2)


def _attempt(
    policy: WebhookPolicy, hook: Webhook, delivery_id: str, event: str, body: bytes
) -> dict[str, Any]:
    """One request; ``{"status_code", "error", "retry"}`` (``retry``: worth another attempt)."""
    import httpx

    try:
        dest = check_destination(hook.url, policy.allowed_networks)
    except AddressRefused as exc:
        return {"status_code": None, "error": str(exc), "retry": "does not resolve" in str(exc)}
    host_header = dest.host if dest.port in (80, 443) else f"{dest.host}:{dest.port}"
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "ProfilerHub-Webhooks/1",
        "Host": host_header,
        SIGNATURE_HEADER: sign(hook.secret, body),
        EVENT_HEADER: event,
        DELIVERY_HEADER: delivery_id,
    }
    extensions = {"sni_hostname": dest.host} if dest.scheme == "https" else {}
    try:
        with httpx.Client(
            timeout=policy.timeout_s, follow_redirects=False, transport=policy.transport
        ) as http:
            answer = http.post(dest.connect_url, content=body, headers=headers, extensions=extensions)
    except httpx.HTTPError as exc:
        return {"status_code": None, "error": f"{type(exc).__name__}: {exc}"[:300], "retry": True}
    code = answer.status_code
    if 200 <= code < 300:
        return {"status_code": code, "error": None, "retry": False}
    return {
        "status_code": code,
        "error": f"HTTP {code}: {answer.text[:200]}",
        "retry": code >= 500 or code in _RETRY_STATUS,
    }


def deliver(ctx: IngestContext, delivery_id: str) -> Outcome:
    """Make the next attempt of a Pending delivery and record it."""
    policy = ctx.webhooks
    with ctx.sessions() as session:
        delivery = session.get(WebhookDelivery, delivery_id)
        if delivery is None or delivery.status is not DeliveryStatus.Pending:
            return Outcome("skipped")
        hook = session.get(Webhook, delivery.webhook_id)
        if hook is None:
            return Outcome("skipped")
        session.expunge(hook)
        before = list(delivery.attempts or [])
        event = delivery.event
        body = json.dumps(
            {"id": delivery.id, "created_at": delivery.created_at.isoformat(), **delivery.payload},
            separators=(",", ":"),
        ).encode()
    started = time.monotonic()
    tried = _attempt(policy, hook, delivery_id, event, body)
    entry = {
        "at": utcnow().isoformat(),
        "status_code": tried["status_code"],
        "error": tried["error"],
        "ms": round((time.monotonic() - started) * 1000, 1),
    }
    attempts = [*before, entry]
    if tried["status_code"] is not None and tried["error"] is None:
        outcome = Outcome(DeliveryStatus.Delivered.value)
    elif tried["retry"] and len(attempts) < policy.max_attempts:
        outcome = Outcome("retry", backoff(policy, len(attempts)))
    else:
        outcome = Outcome(DeliveryStatus.Failed.value)
    values: dict[str, Any] = {"attempts": attempts}
    if outcome.result == "retry":
        values["next_attempt_at"] = utcnow() + timedelta(seconds=outcome.countdown)
    else:
        values.update(status=DeliveryStatus(outcome.result), next_attempt_at=None, finished_at=utcnow())
    with ctx.sessions() as session:
        rows = session.execute(
            sa.update(WebhookDelivery)
            .where(
                WebhookDelivery.id == delivery_id,
                WebhookDelivery.status == DeliveryStatus.Pending,
                sa.func.json_array_length(WebhookDelivery.attempts) == len(before),  # SQLite and PostgreSQL
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        ).rowcount  # type: ignore[attr-defined]
        session.commit()
    return outcome if rows else Outcome("skipped")


__all__ = ["Outcome", "backoff", "deliver"]
