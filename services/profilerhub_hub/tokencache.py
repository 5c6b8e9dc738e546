"""Callers of recently verified tokens, so a burst of requests with one token costs one lookup.

    cache = TokenCache(seconds=1.0, epoch=SharedEpoch(redis, key))
    caller = cache.lookup(secret, load)   # load() -> (Caller, expires_at), called on a miss only

Staleness bound: an entry is trusted for ``seconds`` (``PROFILERHUB_TOKEN_CACHE_SECONDS``,
default 1; 0 turns the cache off), and only while the installation's *epoch* is the one it was
verified under. A change committed through any hub process (revoking a token, deleting a user,
changing a role or a domain's settings, anything else) empties that process's cache and bumps the
epoch in the shared Redis (``invalidate_on_write``); every other process then misses on its next
request and looks the token up again. So with a Redis shared by the hub processes a revocation is
honoured by every replica at once (from the moment the revoking request has answered); without
Redis, or while it is unreachable, another process sees it at most ``seconds`` later. A token's
own expiry is checked on every hit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker

from profilerhub_core.db.models import utcnow
from profilerhub_core.security import hash_token
from profilerhub_hub.permissions import Caller
from profilerhub_hub.shared import Fallback

_WROTE = "profilerhub.wrote"
# Set in ``session.info`` by a writer whose rows no credential depends on (the rate limiter's
# audit events): its commit keeps the caches, so a flood of refusals cannot flush them.
KEEPS_TOKEN_CACHE = "profilerhub.keeps_token_cache"
_fallback = Fallback("token caches fall back to their time bound (token_cache_seconds)")


class SharedEpoch:
    """A counter in Redis that every committed write bumps; ``read()`` is None without Redis."""

    def __init__(self, redis: Any | None, key: str) -> None:
        self.redis = redis
        self.key = key

    def read(self) -> int | None:
        if self.redis is None:
            return None
        try:
            epoch = int(self.redis.get(self.key) or 0)
        except Exception as exc:
            _fallback.note(exc)
            return None
        _fallback.answered()
        return epoch

    def bump(self) -> None:
        if self.redis is None:
            return
        try:
            self.redis.incr(self.key)
        except Exception as exc:
            _fallback.note(exc)
        else:
            _fallback.answered()


class TokenCache:
    """Verified callers by token hash, each trusted for ``seconds`` within one epoch (bounded to
    ``max_entries``)."""

    def __init__(self, seconds: float, epoch: SharedEpoch | None = None, max_entries: int = 10_000) -> None:
        self.seconds = seconds
        self.epoch = epoch or SharedEpoch(None, "")
        self.max_entries = max_entries
        self._entries: dict[str, tuple[Caller, float, datetime | None, int | None]] = {}
        self._lock = threading.Lock()

    def lookup(self, secret: str, load: Callable[[], tuple[Caller, datetime | None]]) -> Caller:
        """The caller of ``secret``: cached, else ``load()`` (which raises for a bad token)."""
        if self.seconds <= 0:
            return load()[0]
        key, epoch = hash_token(secret), self.epoch.read()  # the epoch before the lookup, not after
        entry = self._entries.get(key)
        if entry is not None:
            caller, trusted_until, expires_at, verified_in = entry
            fresh = time.monotonic() < trusted_until and verified_in == epoch
            if fresh and (expires_at is None or expires_at > utcnow()):
                return caller
        caller, expires_at = load()
        with self._lock:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = (caller, time.monotonic() + self.seconds, expires_at, epoch)
        return caller

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def invalidate_on_write(self, sessions: sessionmaker[Session]) -> None:
        """Empty the cache (and bump the shared epoch) whenever a session of ``sessions`` commits a
        write (ORM or DML)."""

        def flushed(session: Session, _context: Any) -> None:
            session.info[_WROTE] = True

        def executed(state: ORMExecuteState) -> None:
            if not state.is_select:
                state.session.info[_WROTE] = True

        def committed(session: Session) -> None:
            if session.info.pop(_WROTE, False) and not session.info.get(KEEPS_TOKEN_CACHE):
                self.clear()
                self.epoch.bump()

        event.listen(sessions, "after_flush", flushed)
        event.listen(sessions, "do_orm_execute", executed)
        event.listen(sessions, "after_commit", committed)


__all__ = ["KEEPS_TOKEN_CACHE", "SharedEpoch", "TokenCache"]
