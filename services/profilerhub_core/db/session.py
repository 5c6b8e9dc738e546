"""Engines and sessions (synchronous SQLAlchemy, shared by the hub, Celery tasks and the CLI).

    engine = make_engine(settings)
    Session = session_factory(engine)
    with Session() as session:
        ...model functions (they flush)...
        session.commit()          # the caller commits once

The hub's routes are plain ``def`` functions that run in FastAPI's thread pool, each with its own
session from the pool; on SQLite the hub's token check and target lookup run on the event loop
(``reads_are_local``) and its writers take turns (``serialize_writes``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import ORMExecuteState, Session, SessionTransaction, sessionmaker

from profilerhub_core.outage import DATABASE, is_outage
from profilerhub_core.settings import Settings

SQLITE_BUSY_TIMEOUT_MS = 30_000
SQLITE_POOL_SIZE = 41  # AnyIO's default thread pool (40 threads) and the event loop


def _sqlite_on_connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers run beside the one writer; busy_timeout makes a second writer wait its
    # turn instead of failing at once.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


class WriteRequired(Exception):
    """A step run as read-only found that it must write; the caller reruns it where writes may wait."""


def reads_are_local(engine: Engine) -> bool:
    """Whether a short read may run on the event loop: SQLite (a local file; WAL readers never wait
    for the writer). A network database keeps every query in the thread pool."""
    return engine.url.get_backend_name() == "sqlite"


class _WriteTurn:
    """One writing session at a time per process (see ``serialize_writes``)."""

    def __init__(self, timeout: float) -> None:
        self.lock = threading.Lock()
        self.timeout = timeout

    def take(self, session: Session) -> None:
        if session.info.get(_HOLDS_WRITE_TURN):
            return
        if not self.lock.acquire(timeout=self.timeout):
            raise sa.exc.OperationalError("waiting for the write turn", None, TimeoutError("write turn"))
        session.info[_HOLDS_WRITE_TURN] = True

    def give_back(self, session: Session) -> None:
        if session.info.pop(_HOLDS_WRITE_TURN, False):
            self.lock.release()


_HOLDS_WRITE_TURN = "profilerhub.write_turn"


def _writes(state: ORMExecuteState) -> bool:
    if state.is_insert or state.is_update or state.is_delete:
        return True
    statement = state.statement
    if isinstance(statement, sa.TextClause):  # raw SQL: anything but a query may write
        return not statement.text.lstrip()[:6].upper().startswith(("SELECT", "WITH", "PRAGMA"))
    return False


def serialize_writes(sessions: sessionmaker[Session]) -> None:
    """Let one session of ``sessions`` at a time write (SQLite: one process, one writer).

    SQLite has one write lock per database, and a connection that finds it taken sleeps in
    growing steps (up to 100 ms) before it retries; with dozens of threads writing at once some
    requests lost seconds that way. Here a session takes the process's write turn at its first
    write (flush or DML) and gives it back when its transaction ends, so threads queue in order
    and only one connection per process waits for SQLite's lock.
    """
    turn = _WriteTurn(SQLITE_BUSY_TIMEOUT_MS / 1000)

    def flushing(session: Session, _context: Any, _instances: Any) -> None:
        turn.take(session)

    def executing(state: ORMExecuteState) -> None:
        if _writes(state):
            turn.take(state.session)

    def ended(session: Session, transaction: SessionTransaction) -> None:
        if transaction.parent is None:
            turn.give_back(session)

    event.listen(sessions, "before_flush", flushing)
    event.listen(sessions, "do_orm_execute", executing)
    event.listen(sessions, "after_transaction_end", ended)


def make_engine(settings: Settings | str, **overrides: Any) -> Engine:
    """An engine for ``settings.database_url`` (or a URL), tuned for the backend it names."""
    url = make_url(settings if isinstance(settings, str) else settings.database_url)
    options: dict[str, Any] = {}
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        options["connect_args"] = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    pool_size = settings.db_pool_size if isinstance(settings, Settings) else 5
    if url.get_backend_name() == "sqlite":
        # A connection per thread-pool thread plus the event loop's: SQLite connections are
        # cheap, while one opened past the pool is closed on return (reopened with its PRAGMAs
        # on the next request) and a reader on the event loop must never wait for a free one.
        pool_size = max(pool_size, SQLITE_POOL_SIZE)
    options.update(pool_size=pool_size, max_overflow=pool_size)
    if url.get_backend_name() != "sqlite":
        # pre_ping: after a database restart a pooled connection is found dead at checkout and
        # replaced, instead of failing the request that drew it.
        options.update(pool_recycle=1800, pool_pre_ping=True)
    options.update(overrides)
    engine = sa.create_engine(url, **options)
    if url.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_on_connect)
    watch_outages(engine)
    return engine


def watch_outages(engine: Engine) -> None:
    """Log the database's outages as this process sees them: one line when statements start failing
    to reach it, one when one succeeds again (``profilerhub_core.outage``)."""

    def failed(context: sa.engine.ExceptionContext) -> None:
        if context.is_pre_ping:  # a stale pooled connection; a failing reconnect is reported itself
            return
        if context.is_disconnect or is_outage(context.original_exception):
            DATABASE.failed(context.original_exception)

    def succeeded(*_: Any) -> None:
        DATABASE.recovered()

    event.listen(engine, "handle_error", failed)
    event.listen(engine, "after_cursor_execute", succeeded)


@contextmanager
def read_connection(session: Session) -> Iterator[sa.Connection]:
    """A connection for one read-only statement: the session's own while it holds one (the same
    transaction), else one of its engine's pooled connections for this statement alone. Beginning
    and committing the session's transaction for a single read cost four times the checkout."""
    bind = session.get_bind()
    if session.in_transaction() or not isinstance(bind, Engine):
        yield session.connection()
        return
    with bind.connect() as connection:
        yield connection


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions bound to ``engine``; objects stay readable after commit (no reload per attribute)."""
    return sessionmaker(engine, expire_on_commit=False)


__all__ = [
    "WriteRequired",
    "make_engine",
    "read_connection",
    "reads_are_local",
    "serialize_writes",
    "session_factory",
    "watch_outages",
]
