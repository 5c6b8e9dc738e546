"""Browser sessions: start one (from a token, a presigned link, an app link), authenticate its
cookie, end it, and end every session of a user or of a token.

A session's cookie holds a random secret; the database keeps only its sha256, so a stolen
database reveals no live cookie. Every request looks the session up (one indexed query): ending
it in the database ends it everywhere at once, in every hub process.

Lineage: every credential dies with its source. A session (and a one-time link, before it is
redeemed) records the credential it descends from as a ``Source``:

    token T / access key K ──► console session S ──► link ──► app session A
    OpenID / password sign-in ─┘   (root: no token)     (token_id T, parent_id S)

A token (or access key) a caller mints records its root's kind (``ApiToken.source``, carried from
token to token: a token minted with a token that ``profilerhub login`` got from the password is
``password`` too), so a password reset revokes every token descended from the password, and with
them (``token_id``) every session and link descended from those.

``token_id`` is the root's token (carried down unchanged), ``parent_id`` the session whose caller
made the link. A session is live while its own row is (not ended, not expired) AND its root token
is (not revoked, not expired, not deleted) AND its parent is: ``authenticate_session`` checks all
three in its one query, so revoking T, or ending S, refuses every descendant at once without a
cache to flush. Ending a session ends its descendants too (``parent_id``, transitively), a new
session never outlives its source (``start_session`` caps it, and refuses a dead source), and
"sign out everywhere" stamps the user's ``signed_out_at`` so links issued before it are void.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from profilerhub_core.db.models import ApiToken, BrowserSession, Domain, Role, UserProfile, utcnow
from profilerhub_core.errors import Unauthorized
from profilerhub_core.security import hash_token, new_token

CONSOLE, APP = "console", "app"
# The kinds of credential at the root of a session's lineage.
TOKEN, ACCESS_KEY, OIDC, PASSWORD = "token", "access-key", "oidc", "password"


class LinkAlreadyUsed(Unauthorized):
    """A presigned sign-in link's nonce is already spent."""


@dataclass(frozen=True, slots=True)
class Source:
    """The credential a new session (or a link for one) descends from.

    ``kind``: the root's kind (``TOKEN``, ``ACCESS_KEY``, ``OIDC``, ``PASSWORD``); ``token_id``:
    the root token, if the root is one; ``parent_id``: the session whose caller made the link;
    ``issued_at``: when the link was made (a link issued before the user's ``signed_out_at`` is
    void; None for a sign-in happening now)."""

    kind: str
    token_id: str | None = None
    parent_id: str | None = None
    issued_at: datetime | None = None


def micros(when: datetime) -> int:
    """``when`` as whole microseconds since the epoch (how a signed link carries its issue time)."""
    return int(when.timestamp() * 1_000_000)


def from_micros(value: int) -> datetime:
    return datetime.fromtimestamp(value / 1_000_000, UTC)


def source_expiry(
    session: Session, user_id: str, source: Source, now: datetime | None = None
) -> datetime | None:
    """When ``source`` stops being live (None: no expiry of its own); ``Unauthorized`` when it is
    not live now: its user is gone or signed out everywhere since the link was issued, its root
    token is revoked, expired or gone, or its parent session ended or expired."""
    now = now or utcnow()
    user = session.execute(
        sa.select(UserProfile.id, UserProfile.signed_out_at).where(UserProfile.id == user_id)
    ).one_or_none()
    if user is None:
        raise Unauthorized("This sign-in is not valid any more: its user no longer exists")
    signed_out_at = user.signed_out_at
    if source.issued_at is not None and signed_out_at is not None and source.issued_at <= signed_out_at:
        raise Unauthorized("This link was made before its user signed out everywhere; ask for a new one")
    ends: list[datetime] = []
    if source.token_id is not None:
        token = session.execute(
            sa.select(ApiToken.revoked_at, ApiToken.expires_at).where(ApiToken.id == source.token_id)
        ).one_or_none()
        if token is None or token.revoked_at is not None:
            raise Unauthorized("The token this sign-in comes from has been revoked; sign in again")
        if token.expires_at is not None:
            if token.expires_at <= now:
                raise Unauthorized("The token this sign-in comes from has expired; sign in again")
            ends.append(token.expires_at)
    if source.parent_id is not None:
        parent = session.execute(
            sa.select(BrowserSession.revoked_at, BrowserSession.expires_at).where(
                BrowserSession.id == source.parent_id
            )
        ).one_or_none()
        if parent is None or parent.revoked_at is not None or parent.expires_at <= now:
            raise Unauthorized("The session this link was made in has ended; sign in again")
        ends.append(parent.expires_at)
    return min(ends, default=None)


def start_session(
    session: Session,
    user_id: str,
    *,
    kind: str,
    seconds: int,
    via: str,
    source: Source,
    scopes: Sequence[str] = ("*",),
    impersonated_by: str | None = None,
    app_id: str | None = None,
    nonce: str | None = None,
) -> tuple[BrowserSession, str]:
    """A new session row and its cookie secret, descending from ``source``: refused
    (``Unauthorized``) when the source is not live, and ending no later than it does. A ``nonce``
    already used raises ``LinkAlreadyUsed`` (the unique constraint decides, so two hub processes
    redeeming one link at once cannot both win)."""
    now = utcnow()
    expires_at = now + timedelta(seconds=seconds)
    cap = source_expiry(session, user_id, source, now)
    secret = new_token()
    row = BrowserSession(
        user_id=user_id,
        secret_hash=hash_token(secret),
        kind=kind,
        app_id=app_id,
        token_id=source.token_id,
        parent_id=source.parent_id,
        source=source.kind,
        scopes=list(scopes),
        impersonated_by=impersonated_by,
        nonce=nonce,
        via=via,
        created_at=now,
        expires_at=min(expires_at, cap) if cap is not None else expires_at,
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
    token_id: str | None = None  # the root token of the session's lineage, if its root is one
    source: str = TOKEN
    # The root token's own expiry (None: none, or the root is no token): what a token the
    # session mints may not outlive.
    token_expires_at: datetime | None = None
    token_source: str | None = None  # the root token's own lineage root (``ApiToken.source``)

    @property
    def lineage(self) -> Source:
        """The ``Source`` of a session (or link) this session's caller starts."""
        return Source(self.source, self.token_id, self.session_id)


_s, _u, _d = BrowserSession.__table__.c, UserProfile.__table__.c, Domain.__table__.c
_root, _parent = ApiToken.__table__.alias("root_token"), BrowserSession.__table__.alias("parent")
_t, _p = _root.c, _parent.c
_AUTH_QUERY = (
    sa.select(
        _s.id.label("session_id"), _s.kind, _s.app_id, _s.scopes, _s.impersonated_by, _s.secret_hash,
        _s.expires_at, _s.revoked_at, _s.token_id, _s.source, _s.parent_id,
        _t.id.label("root_id"), _t.revoked_at.label("root_revoked_at"),
        _t.expires_at.label("root_expires_at"), _t.source.label("root_source"),
        _p.revoked_at.label("parent_revoked_at"), _p.expires_at.label("parent_expires_at"),
        _p.id.label("parent_found"),
        _u.id, _u.name, _u.role, _u.is_platform_admin, _d.id, _d.name, _d.settings,
    )
    .select_from(
        BrowserSession.__table__.join(UserProfile.__table__).join(Domain.__table__)
        .outerjoin(_root, _t.id == _s.token_id)
        .outerjoin(_parent, _p.id == _s.parent_id)
    )
    .where(_s.secret_hash == sa.bindparam("secret_hash"))
)  # fmt: skip


def authenticate_session(
    session: Session, secret: str, *, kind: str, now: datetime | None = None
) -> SessionOwner:
    """The live session of ``kind`` whose cookie is ``secret``; ``Unauthorized`` otherwise (unknown,
    ended, expired, another kind alike, or a source that is not live: see the module's lineage)."""
    now = now or utcnow()
    row = session.connection().execute(_AUTH_QUERY, {"secret_hash": hash_token(secret)}).one_or_none()
    if row is None or row.kind != kind:
        raise Unauthorized("Your session is not valid; sign in again")
    if row.revoked_at is not None:
        raise Unauthorized("Your session has ended; sign in again")
    if row.expires_at <= now:
        raise Unauthorized("Your session has expired; sign in again")
    if row.token_id is not None and (
        row.root_id is None or row.root_revoked_at is not None
        or (row.root_expires_at is not None and row.root_expires_at <= now)
    ):  # fmt: skip
        raise Unauthorized("The token you signed in with has been revoked or has expired; sign in again")
    if row.parent_id is not None and (
        row.parent_found is None or row.parent_revoked_at is not None or row.parent_expires_at <= now
    ):
        raise Unauthorized("The session this one was opened from has ended; sign in again")
    user_id, user_name, role, is_platform_admin, domain_id, domain_name, domain_settings = row[-7:]
    return SessionOwner(
        row.session_id, row.kind, row.app_id, tuple(row.scopes), row.impersonated_by, row.secret_hash,
        user_id, user_name, Role(role), is_platform_admin, domain_id, domain_name, domain_settings or {},
        row.expires_at, row.token_id, row.source, row.root_expires_at, row.root_source,
    )  # fmt: skip


def end_sessions(session: Session, *where: Any) -> int:
    """End the live sessions matching ``where`` (column conditions on ``BrowserSession``) and every
    live session descended from them; how many ended."""
    now, ended = utcnow(), 0
    live = BrowserSession.revoked_at.is_(None)
    ids = list(session.scalars(sa.select(BrowserSession.id).where(*where, live)))
    while ids:
        session.execute(sa.update(BrowserSession).where(BrowserSession.id.in_(ids)).values(revoked_at=now))
        ended += len(ids)
        ids = list(
            session.scalars(sa.select(BrowserSession.id).where(BrowserSession.parent_id.in_(ids), live))
        )
    return ended


def end_session(session: Session, secret: str) -> bool:
    """End the session whose cookie is ``secret`` (sign-out), and its descendants; False if there
    was none live."""
    return end_sessions(session, BrowserSession.secret_hash == hash_token(secret)) > 0


def end_user_sessions(session: Session, user_id: str) -> int:
    """End every live session of a user (console and apps) and everything descended from them,
    and void the links issued until now ("sign out everywhere"); how many sessions ended."""
    session.execute(sa.update(UserProfile).where(UserProfile.id == user_id).values(signed_out_at=utcnow()))
    return end_sessions(session, BrowserSession.user_id == user_id)


def end_token_sessions(session: Session, token_id: str) -> int:
    """End every live session descended from the token (or access key) ``token_id``."""
    return end_sessions(session, BrowserSession.token_id == token_id)


__all__ = [
    "ACCESS_KEY",
    "APP",
    "CONSOLE",
    "OIDC",
    "PASSWORD",
    "TOKEN",
    "LinkAlreadyUsed",
    "SessionOwner",
    "Source",
    "authenticate_session",
    "end_session",
    "end_sessions",
    "end_token_sessions",
    "end_user_sessions",
    "from_micros",
    "micros",
    "source_expiry",
    "start_session",
]
