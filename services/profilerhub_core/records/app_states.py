"""The app state machine, written down once.

    Pending ──► InService ──► Deleting ──► Deleted
       │            │            ▲
       └──► Failed ◄┘────────────┘   (Failed ──► Deleting)

``transition`` is the only code that changes ``App.status`` after the row is created.  It is a
compare-and-set (``UPDATE apps SET status=:to WHERE id=:id AND status=:from``), so of two
workers racing on one app exactly one wins, and a duplicated or late task finds the state moved
on and does nothing.  Every change it makes is written to the audit log in the same
transaction; the caller commits.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import App, AppStatus, utcnow
from profilerhub_core.records.moves import after_move, rows_changed

TRANSITIONS: dict[AppStatus, frozenset[AppStatus]] = {
    AppStatus.Pending: frozenset({AppStatus.InService, AppStatus.Failed}),
    AppStatus.InService: frozenset({AppStatus.Deleting, AppStatus.Failed}),
    AppStatus.Failed: frozenset({AppStatus.Deleting}),
    AppStatus.Deleting: frozenset({AppStatus.Deleted}),
    AppStatus.Deleted: frozenset(),
}

DELETABLE = frozenset({AppStatus.InService, AppStatus.Failed})
"""States a DeleteApp request may start from (as SageMaker)."""

# The columns a transition may set besides status (status itself is never in ``fields``).
_FIELDS = frozenset({"failure_reason", "endpoint", "spawner_state", "last_activity_at"})


class IllegalTransition(ValueError):
    """A transition that the table above does not allow: a programming error, never user input."""


def can_transition(from_: AppStatus, to: AppStatus) -> bool:
    return to in TRANSITIONS[from_]


def transition(
    session: Session,
    app_id: str,
    from_: AppStatus,
    to: AppStatus,
    *,
    actor: str = "worker",
    **fields: Any,
) -> bool:
    """Move app ``app_id`` from ``from_`` to ``to`` if it is still in ``from_``; True if it moved.

    ``fields`` may set ``failure_reason``, ``endpoint``, ``spawner_state`` and
    ``last_activity_at`` in the same update.  Flushes; the caller commits.
    """
    if not can_transition(from_, to):
        raise IllegalTransition(f"an app cannot go from {from_} to {to}")
    unknown = set(fields) - _FIELDS
    if unknown:
        raise IllegalTransition(f"a transition cannot set {sorted(unknown)}")
    now = utcnow()
    result = session.execute(
        sa.update(App)
        .where(App.id == app_id, App.status == from_)
        .values(status=to, status_changed_at=now, updated_at=now, **fields)
        .execution_options(synchronize_session=False)
    )
    moved = bool(rows_changed(result))
    if moved:
        after_move(session, App, app_id, from_, to, actor=actor, failure_reason=fields.get("failure_reason"))
    return moved


__all__ = ["DELETABLE", "TRANSITIONS", "IllegalTransition", "can_transition", "transition"]
