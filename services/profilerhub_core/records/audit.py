"""The audit trail: every change (and every refused change) with who, what, where and the outcome."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import AuditEvent

SUCCESS = "success"
DENIED = "denied"
FAILED = "failed"


def record_audit(
    session: Session,
    *,
    actor: str,
    action: str,
    target_type: str,
    target: str,
    domain: str | None = None,
    outcome: str = SUCCESS,
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    """Add one audit event (flushed, committed with the caller's transaction).

    ``actor`` is ``"<domain>/<user>"`` for people (``Caller.actor``) or a component name such as
    ``"worker"``; ``action`` is an ``Action`` value or a state change like ``"AppInService"``;
    ``target`` names the resource (``"<domain>/<user>"``, an app id, ...). Never put secrets in
    ``detail``.
    """
    event = AuditEvent(
        actor=actor,
        action=action,
        target_type=target_type,
        target=target,
        domain=domain,
        outcome=outcome,
        detail=detail or {},
    )
    session.add(event)
    session.flush()
    return event


def audit_query(
    *,
    domain: str | None = None,
    actor: str | None = None,
    action: str | None = None,
    target_type: str | None = None,
    target: str | None = None,
    outcome: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> sa.Select[AuditEvent]:
    """Audit events matching every given filter (unordered; paginate by id descending)."""
    stmt = sa.select(AuditEvent)
    exact = {
        "domain": domain,
        "actor": actor,
        "action": action,
        "target_type": target_type,
        "target": target,
        "outcome": outcome,
    }
    for column, value in exact.items():
        if value is not None:
            stmt = stmt.where(getattr(AuditEvent, column) == value)
    if since is not None:
        stmt = stmt.where(AuditEvent.at >= since)
    if until is not None:
        stmt = stmt.where(AuditEvent.at < until)
    return stmt


__all__ = ["DENIED", "FAILED", "SUCCESS", "audit_query", "record_audit"]
