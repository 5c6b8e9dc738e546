"""The one mechanism behind every state machine: a transition table and a compare-and-set move.

``app_states`` and ``job_states`` each write their machine down as a ``StateMachine``: which
states may follow which, and which columns a move may set besides ``status``. ``move`` is the only
code that changes a row's ``status`` after it is created:

    UPDATE <table> SET status=:to, <stamps>=now, <fields> WHERE id=:id AND status=:from [AND <guards>]

so of two workers racing on one row exactly one wins, and a duplicated or late task finds the state
moved on and does nothing. Once a row has moved, the audit event (``App<To>`` / ``Job<To>``) is
written in the same transaction and the session's loaded copy is expired, so nothing shows the old
status. A move a person asked for (``audited=False``) leaves its row to the hub's use case, which
audits the operation once (``DeleteApp``, not ``DeleteApp`` and ``AppDeleting``); the moves workers
make are audited here. Flushes; the caller commits.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.engine import CursorResult, Result
from sqlalchemy.orm import Session
from sqlalchemy.orm.util import identity_key

from profilerhub_core.db.models import App, Domain, Job, utcnow
from profilerhub_core.records.audit import SUCCESS, record_audit

S = TypeVar("S", bound=enum.Enum)


class IllegalTransition(ValueError):
    """A move the transition table does not allow, or a column a move may not set: a programming
    error, never user input."""


def rows_changed(result: Result[Any]) -> int:
    """How many rows an ``UPDATE`` (executed through the session) changed."""
    return cast(CursorResult[Any], result).rowcount


@dataclass(frozen=True)
class StateMachine(Generic[S]):
    """One resource's states: the table, the columns a move may set, what a move stamps."""

    model: type[App] | type[Job]
    noun: str
    """How errors name one row: "an app", "a job"."""
    transitions: Mapping[S, frozenset[S]]
    fields: frozenset[str]
    """Columns a move may set besides ``status``."""
    stamps: tuple[str, ...]
    """Columns every move sets to the time of the move."""
    outcome: Callable[[S], str] = lambda _to: SUCCESS
    """The audit outcome of moving to a state."""

    def __post_init__(self) -> None:
        states = set(self.transitions)
        for targets in self.transitions.values():
            if not targets <= states:
                unknown = targets - states
                raise RuntimeError(f"{self.model.__name__} transitions name unknown states: {unknown}")

    def can(self, from_: S, to: S) -> bool:
        return to in self.transitions[from_]

    def move(
        self,
        session: Session,
        row_id: str,
        from_: S,
        to: S,
        *,
        actor: str,
        guards: Sequence[sa.ColumnElement[bool]] = (),
        now: datetime | None = None,
        audited: bool = True,
        **fields: Any,
    ) -> bool:
        """Move row ``row_id`` from ``from_`` to ``to`` if it is still in ``from_`` (and every
        ``guard`` holds); True if it moved. ``audited=False``: the caller writes the audit row."""
        if not self.can(from_, to):
            raise IllegalTransition(f"{self.noun} cannot go from {from_} to {to}")
        unknown = set(fields) - self.fields
        if unknown:
            raise IllegalTransition(f"a transition cannot set {sorted(unknown)}")
        now = now or utcnow()
        model = self.model
        stmt = sa.update(model).where(model.id == row_id, model.status == from_, *guards)
        values = {"status": to, **dict.fromkeys(self.stamps, now), **fields}
        result = session.execute(stmt.values(**values).execution_options(synchronize_session=False))
        moved = bool(rows_changed(result))
        if moved:
            self._after_move(session, row_id, from_, to, actor, fields.get("failure_reason"), audited)
        return moved

    def _after_move(
        self,
        session: Session,
        row_id: str,
        from_: S,
        to: S,
        actor: str,
        failure_reason: str | None,
        audited: bool,
    ) -> None:
        if audited:
            self._audit_move(session, row_id, from_, to, actor, failure_reason)
        loaded = session.identity_map.get(identity_key(self.model, row_id))
        if loaded is not None:
            session.expire(loaded)

    def _audit_move(
        self, session: Session, row_id: str, from_: S, to: S, actor: str, failure_reason: str | None
    ) -> None:
        model = self.model
        domain = session.scalar(
            sa.select(Domain.name).join(model, model.domain_id == Domain.id).where(model.id == row_id)
        )
        detail: dict[str, Any] = {"from": from_.value, "to": to.value}
        if failure_reason:
            detail["reason"] = failure_reason
        name = model.__name__
        record_audit(
            session,
            actor=actor,
            action=f"{name}{to.value}",
            target_type=name,
            target=row_id,
            domain=domain,
            outcome=self.outcome(to),
            detail=detail,
        )


__all__ = ["IllegalTransition", "StateMachine", "rows_changed"]
