"""What every compare-and-set state change shares, for ``app_states`` and ``job_states``.

Each state machine keeps its own transition table and ``UPDATE … WHERE status = :from``; once a
row has moved, ``after_move`` writes the audit event (``App<To>`` / ``Job<To>``) in the same
transaction and expires the session's loaded copy, so nothing shows the old status.
"""

from __future__ import annotations

import enum
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import CursorResult, Result
from sqlalchemy.orm import Session
from sqlalchemy.orm.util import identity_key

from profilerhub_core.db.models import App, Domain, Job
from profilerhub_core.records.audit import SUCCESS, record_audit


def rows_changed(result: Result[Any]) -> int:
    """How many rows an ``UPDATE`` (executed through the session) changed."""
    return cast(CursorResult[Any], result).rowcount


def after_move(
    session: Session,
    model: type[App] | type[Job],
    row_id: str,
    from_: enum.Enum,
    to: enum.Enum,
    *,
    actor: str,
    failure_reason: str | None = None,
    outcome: str = SUCCESS,
) -> None:
    """Audit the move of ``model`` row ``row_id`` and expire its loaded copy. Flushes."""
    domain = session.scalar(
        sa.select(Domain.name).join(model, model.domain_id == Domain.id).where(model.id == row_id)
    )
    detail: dict[str, Any] = {"from": from_.value, "to": to.value}
    if failure_reason:
        detail["reason"] = failure_reason
    kind = model.__name__
    record_audit(
        session,
        actor=actor,
        action=f"{kind}{to.value}",
        target_type=kind,
        target=row_id,
        domain=domain,
        outcome=outcome,
        detail=detail,
    )
    loaded = session.identity_map.get(identity_key(model, row_id))
    if loaded is not None:
        session.expire(loaded)


__all__ = ["after_move", "rows_changed"]
