"""SQLite writes from one process take turns (``serialize_writes``), and every way a
transaction ends gives the turn back."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from profilerhub_core.db.session import make_engine, serialize_writes, session_factory


@pytest.fixture
def sessions(tmp_path: Path) -> sessionmaker[Session]:
    engine = make_engine(f"sqlite:///{tmp_path / 'turns.db'}")
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE t (x INTEGER)"))
    factory = session_factory(engine)
    serialize_writes(factory)
    return factory


def _write_in_thread(sessions: sessionmaker[Session]) -> threading.Thread:
    def write() -> None:
        with sessions() as session:
            session.execute(sa.text("INSERT INTO t VALUES (2)"))
            session.commit()

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    "end",
    [Session.commit, Session.rollback, Session.close],
    ids=["commit", "rollback", "close"],
)
def test_a_second_writer_waits_for_the_first_transaction_to_end(
    sessions: sessionmaker[Session], end: Callable[[Session], None]
) -> None:
    first = sessions()
    first.execute(sa.text("INSERT INTO t VALUES (1)"))  # takes the write turn
    second = _write_in_thread(sessions)
    second.join(timeout=0.5)
    assert second.is_alive(), "the second writer did not wait for the turn"
    end(first)
    second.join(timeout=10)
    assert not second.is_alive(), "the turn was not given back"
    first.close()


def test_reads_do_not_take_the_turn(sessions: sessionmaker[Session]) -> None:
    reader = sessions()
    assert reader.execute(sa.text("SELECT count(*) FROM t")).scalar() == 0
    writer = _write_in_thread(sessions)
    writer.join(timeout=10)
    assert not writer.is_alive()
    reader.close()
