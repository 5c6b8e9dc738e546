"""Committing a change together with its audit event."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from profilerhub_core.records.audit import record_audit
from profilerhub_hub.permissions import Action, Caller


def commit_audited(
    session: Session,
    caller: Caller,
    action: Action,
    *,
    target_type: str,
    target: str,
    domain: str | None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Record that ``caller`` did ``action`` successfully and commit it with the change, atomically."""
    record_audit(
        session,
        actor=caller.actor,
        action=action.value,
        target_type=target_type,
        target=target,
        domain=domain,
        detail=detail,
    )
    session.commit()


__all__ = ["commit_audited"]
