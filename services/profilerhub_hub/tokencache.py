"""Callers of recently verified tokens, so a burst of requests with one token costs one lookup.

    cache = TokenCache(seconds=1.0)
    caller = cache.get(secret)          # None: look the token up, then cache.put(secret, caller, ...)

Staleness bound: an entry is trusted for ``seconds`` (``PROFILERHUB_TOKEN_CACHE_SECONDS``,
default 1; 0 turns the cache off). A change committed through this process's sessions (revoking a
token, deleting a user, changing a role or a domain's settings, anything else) empties the cache
at once (``invalidate_on_write``); a change made by another hub process is seen at most
``seconds`` later. A token's own expiry is checked on every hit.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker

from profilerhub_core.db.models import utcnow
from profilerhub_core.security import hash_token
from profilerhub_hub.permissions import Caller

_WROTE = "profilerhub.wrote"


class TokenCache:
    """Verified callers by token hash, each trusted for ``seconds`` (bounded to ``max_entries``)."""

    def __init__(self, seconds: float, max_entries: int = 10_000) -> None:
        self.seconds = seconds
        self.max_entries = max_entries
        self._entries: dict[str, tuple[Caller, float, datetime | None]] = {}

    def get(self, secret: str) -> Caller | None:
        if self.seconds <= 0:
            return None
        entry = self._entries.get(hash_token(secret))
        if entry is None:
            return None
        caller, trusted_until, expires_at = entry
        if time.monotonic() >= trusted_until or (expires_at is not None and expires_at <= utcnow()):
            return None
        return caller

    def put(self, secret: str, caller: Caller, expires_at: datetime | None) -> None:
        if self.seconds <= 0:
            return
        if len(self._entries) >= self.max_entries:
            self._entries.clear()
        self._entries[hash_token(secret)] = (caller, time.monotonic() + self.seconds, expires_at)

    def clear(self) -> None:
        self._entries.clear()

    def invalidate_on_write(self, sessions: sessionmaker[Session]) -> None:
        """Empty the cache whenever a session of ``sessions`` commits a write (ORM or DML)."""

        def flushed(session: Session, _context: Any) -> None:
            session.info[_WROTE] = True

        def executed(state: ORMExecuteState) -> None:
            if not state.is_select:
                state.session.info[_WROTE] = True

        def committed(session: Session) -> None:
            if session.info.pop(_WROTE, False):
                self.clear()

        event.listen(sessions, "after_flush", flushed)
        event.listen(sessions, "do_orm_execute", executed)
        event.listen(sessions, "after_commit", committed)


__all__ = ["TokenCache"]
