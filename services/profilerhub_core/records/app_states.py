"""The app state machine, written down once.

    Pending ──► InService ──► Deleting ──► Deleted
       │            │            ▲
       └──► Failed ◄┘────────────┘   (Failed ──► Deleting)

``transition`` is the only code that changes ``App.status`` after the row is created: a
compare-and-set on the one mechanism in ``records.states`` (of two workers racing on one app
exactly one wins; a duplicated or late task finds the state moved on and does nothing). Every
change is written to the audit log in the same transaction; the caller commits.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from profilerhub_core.db.models import App, AppStatus
from profilerhub_core.records.states import IllegalTransition, StateMachine

TRANSITIONS: dict[AppStatus, frozenset[AppStatus]] = {
    AppStatus.Pending: frozenset({AppStatus.InService, AppStatus.Failed}),
    AppStatus.InService: frozenset({AppStatus.Deleting, AppStatus.Failed}),
    AppStatus.Failed: frozenset({AppStatus.Deleting}),
    AppStatus.Deleting: frozenset({AppStatus.Deleted}),
    AppStatus.Deleted: frozenset(),
}

DELETABLE = frozenset({AppStatus.InService, AppStatus.Failed})
"""States a DeleteApp request may start from (as SageMaker)."""

APP_STATES = StateMachine(
    model=App,
    noun="an app",
    transitions=TRANSITIONS,
    fields=frozenset({"failure_reason", "endpoint", "spawner_state", "last_activity_at"}),
    stamps=("status_changed_at", "updated_at"),
)


def can_transition(from_: AppStatus, to: AppStatus) -> bool:
    return APP_STATES.can(from_, to)


def transition(
    session: Session,
    app_id: str,
    from_: AppStatus,
    to: AppStatus,
    *,
    actor: str = "worker",
    audited: bool = True,
    **fields: Any,
) -> bool:
    """Move app ``app_id`` from ``from_`` to ``to`` if it is still in ``from_``; True if it moved.

    ``fields`` may set ``failure_reason``, ``endpoint``, ``spawner_state`` and
    ``last_activity_at`` in the same update. ``audited=False``: the caller audits the operation
    that moved it (``StateMachine.move``). Flushes; the caller commits.
    """
    return APP_STATES.move(session, app_id, from_, to, actor=actor, audited=audited, **fields)


__all__ = ["APP_STATES", "DELETABLE", "TRANSITIONS", "IllegalTransition", "can_transition", "transition"]
