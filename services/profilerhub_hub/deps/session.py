"""The request's database session, and running a request's steps as short transactions.

SettingsDep   the process's Settings (passed to create_app)
SessionDep    a database Session for this request; the route commits once
run_step      run one step of a request (a dependency, the route) as its own transaction
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, TypeVar

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session
from starlette.types import ASGIApp, Receive, Scope, Send

from profilerhub_core.db.session import WriteRequired
from profilerhub_core.settings import Settings
from profilerhub_hub.services import services

T = TypeVar("T")


async def get_settings(request: Request) -> Settings:
    settings: Settings = services(request).settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


def request_session(request: Request) -> Session:
    """The request's one Session, made on first use; ``SessionCloser`` closes it after the response.

    (A plain function rather than a ``yield`` dependency: this runs on every request, and exit
    stacks are the most expensive part of FastAPI's dependency solving.)
    """
    session: Session | None = request.scope.get("profilerhub.session")
    if session is None:
        session = request.scope["profilerhub.session"] = services(request).sessions()
    return session


async def get_session(request: Request) -> Session:
    return request_session(request)


class SessionCloser:
    """ASGI middleware closing the request's Session (if one was made) once the response is done.

    The response has gone by then: a database that went away meanwhile (closing rolls back an
    open transaction on its connection) must not raise here, or the server drops the client's
    connection instead of keeping it for the next request. The connection is dropped instead.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        finally:
            session = scope.get("profilerhub.session")
            if session is not None:
                try:
                    session.close()
                except SQLAlchemyError:  # its outage is the request's to report, and was
                    session.invalidate()


SessionDep = Annotated[Session, Depends(get_session)]


@contextmanager
def request_step(session: Session) -> Iterator[None]:
    """End the transaction after one step of a request: commit on success, roll back on error.

    Each sync dependency and the route run in separate thread-pool calls. A connection held while
    waiting for the next thread could starve the pool and deadlock under load, so every step gives
    its connection back. Loaded objects stay usable (``expire_on_commit=False``).
    """
    try:
        yield
    except BaseException:
        session.rollback()
        raise
    if session.in_transaction():
        session.commit()


async def run_step(request: Request, step: Callable[[Session, bool], T]) -> T:
    """Run ``step(session, read_only)`` as one step of the request (see ``request_step``).

    Where reads are local (SQLite, ``HubServices.inline_reads``) the step runs read-only on the event
    loop: a few indexed reads cost less than the hop to a thread-pool thread and back. A step that
    must write (a token's ``last_used_at``, a refusal's audit record) raises ``WriteRequired``,
    is rolled back, and runs again in the thread pool, where waiting for the database's write
    lock blocks only that thread.
    """
    session = request_session(request)
    if services(request).inline_reads:
        try:
            with request_step(session):
                return step(session, True)
        except WriteRequired:
            pass

    def in_thread() -> T:
        with request_step(session):
            return step(session, False)

    return await run_in_threadpool(in_thread)


__all__ = ["SessionCloser", "SessionDep", "SettingsDep", "request_session", "request_step", "run_step"]
