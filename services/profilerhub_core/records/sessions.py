"""Browser sessions: start one (from a token, a presigned link, an app link), authenticate its
cookie, end it, and end every session of a user or of a token.

A session's cookie holds a random secret; the database keeps only its sha256, so a stolen
database reveals no live cookie. Every request looks the session up (one indexed query): ending
it in the database ends it everywhere at once, in every hub process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from profilerhub_core.db.models import BrowserSession, Domain, Role, UserProfile, utcnow
from profilerhub_core.errors import Unauthorized
from profilerhub_core.security import hash_token, new_token

CONSOLE, APP = "console", "app"


class LinkAlreadyUsed(Unauthorized):
    """A presigned sign-in link's nonce is already spent."""


def start_session(
    session: Session,
    user_id: str,
    *,
    kind: str,
    seconds: int,
    via: str,
    scopes: Sequence[str] = ("*",),
    token_id: str | None = None,
    impersonated_by: str | None = None,
    app_id: str | None = None,
    nonce: str | None = None,
) -> tuple[BrowserSession, str]:
    """A new session row and its cookie secret. A ``nonce`` already used raises ``LinkAlreadyUsed``
    (the unique constraint decides, so two hub processes redeeming one link at once cannot both win)."""
    secret = new_token()
    row = BrowserSession(
        user_id=user_id,
        secret_hash=hash_token(secret),
        kind=kind,
        app_id=app_id,
        token_id=token_id,
        scopes=list(scopes),
        impersonated_by=impersonated_by,
        nonce=nonce,
        via=via,
        expires_at=utcnow() + timedelta(seconds=seconds),
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError as exc:
        raise LinkAlreadyUsed("This sign-in link was already used; ask for a new one") from exc
    return row, secret


@dataclass(frozen=True, slots=True)
class SessionOwner:
    """What a live session says about its browser (plain values)."""

    session_id: str
    kind: str
    app_id: str | None
    scopes: tuple[str, ...]
    impersonated_by: str | None
    secret_hash: str
    user_id: str
    user_name: str
    role: Role
    is_platform_admin: bool
    domain_id: str
    domain_name: str
    domain_settings: dict[str, Any]
    expires_at: datetime
    token_id: str | None = None  # the token the session was started with, if any


_s, _u, _d = BrowserSession.__table__.c, UserProfile.__table__.c, Domain.__table__.c
_AUTH_QUERY = (
    sa.select(
        _s.id, _s.kind, _s.app_id, _s.scopes, _s.impersonated_by, _s.secret_hash, _s.expires_at,
        _s.revoked_at, _s.token_id, _u.id, _u.name, _u.role, _u.is_platform_admin, _d.id, _d.name,
        _d.settings,
    )
    .select_from(BrowserSession.__table__.join(UserProfile.__table__).join(Domain.__table__))
    .where(_s.secret_hash == sa.bindparam("secret_hash"))
)  # fmt: skip


def authenticate_session(
    session: Session, secret: str, *, kind: str, now: datetime | None = None
) -> SessionOwner:
    """The live session of ``kind`` whose cookie is ``secret``; ``Unauthorized`` otherwise (unknown,
    ended, expired, or another kind alike)."""
    now = now or utcnow()
    row = session.connection().execute(_AUTH_QUERY, {"secret_hash": hash_token(secret)}).one_or_none()
    if row is None or row.kind != kind:
        raise Unauthorized("Your session is not valid; sign in again")
    sid, kind_, app_id, scopes, impersonated_by, secret_hash, expires_at, revoked_at, token_id, *owner = row
    if revoked_at is not None:
        raise Unauthorized("Your session has ended; sign in again")
    if expires_at <= now:
        raise Unauthorized("Your session has expired; sign in again")
    user_id, user_name, role, is_platform_admin, domain_id, domain_name, domain_settings = owner
    return SessionOwner(
        sid, kind_, app_id, tuple(scopes), impersonated_by, secret_hash, user_id, user_name, Role(role),
        is_platform_admin, domain_id, domain_name, domain_settings or {}, expires_at, token_id,
    )  # fmt: skip


def end_session(session: Session, secret: str) -> bool:
    """End the session whose cookie is ``secret`` (sign-out); False if there was none live."""
    result = session.execute(
        sa.update(BrowserSession)
        .where(BrowserSession.secret_hash == hash_token(secret), BrowserSession.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    return bool(getattr(result, "rowcount", 0))


def end_user_sessions(session: Session, user_id: str) -> int:
    """End every live session of a user (console and apps); how many ended."""
    result = session.execute(
        sa.update(BrowserSession)
        .where(BrowserSession.user_id == user_id, BrowserSession.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    return int(getattr(result, "rowcount", 0))


def end_token_sessions(session: Session, token_id: str) -> int:
    """End every live session started with the token ``token_id``."""
    result = session.execute(
        sa.update(BrowserSession)
        .where(BrowserSession.token_id == token_id, BrowserSession.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    return int(getattr(result, "rowcount", 0))


__all__ = [
    "APP",
    "CONSOLE",
    "LinkAlreadyUsed",
    "SessionOwner",
    "authenticate_session",
    "end_session",
    "end_token_sessions",
    "end_user_sessions",
    "start_session",
]
