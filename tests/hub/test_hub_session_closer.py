"""The request's Session is closed after the response even when the database went away during the
request (PostgreSQL terminating its connection): no exception reaches the server, which would drop
the client's connection (seen as 'connection reset' under a database outage)."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa

from profilerhub_core.db.session import make_engine
from profilerhub_hub.deps.session import SessionCloser


def test_a_session_whose_connection_the_database_ended_closes_quietly(fresh_postgres_url: str) -> None:
    engine = make_engine(fresh_postgres_url)
    try:
        session = sa.orm.Session(engine)
        pid = session.execute(sa.text("select pg_backend_pid()")).scalar_one()  # a transaction is open
        with engine.connect() as admin:
            admin.execute(sa.text("select pg_terminate_backend(:pid)"), {"pid": pid})
        sent: list[dict] = []

        async def app(scope: dict, receive: object, send: object) -> None:
            scope["profilerhub.session"] = session
            sent.append({"type": "http.response.start", "status": 200})

        async def call() -> None:
            await SessionCloser(app)({"type": "http"}, None, None)  # type: ignore[arg-type]

        asyncio.run(call())  # closing rolls back on a dead connection: no exception
        assert sent and not session.in_transaction()
        assert session.execute(sa.text("select 1")).scalar_one() == 1  # the pool gave a fresh one
        session.close()
    finally:
        engine.dispose()
