"""API tokens: issue (secret returned once), list, revoke, and authenticate a bearer secret."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import ApiToken, Domain, Role, UserProfile, utcnow
from profilerhub_core.db.session import WriteRequired
from profilerhub_core.errors import NotFound, Unauthorized
from profilerhub_core.security import display_prefix, hash_token, new_token

ALL_SCOPES = "*"
_TOKEN_ID = re.compile(r"[0-9a-f-]{1,36}")
# An access key is a token row whose ``prefix`` is its key id (``records/access_keys.py``).
ACCESS_KEY_PREFIX = "PHAK"
ACCESS_KEY_ID = re.compile(ACCESS_KEY_PREFIX + "[A-Z2-7]{12}")


def issue_token(
    session: Session,
    user: UserProfile,
    *,
    expires_in_seconds: int | None = None,
    note: str = "",
    scopes: Sequence[str] = (ALL_SCOPES,),
    secret: str | None = None,
    created_by: str | None = None,
    source: str | None = None,
) -> tuple[ApiToken, str]:
    """A new token for ``user``: the row and its secret (the only time the secret exists in clear).

    ``created_by``: the actor who minted it for ``user`` when that is someone else (the token then
    impersonates ``user``); None for the user's own. ``source``: the kind of credential at the root
    of the chain minting it (``Caller.root_source``; ``records.sessions.PASSWORD`` straight from a
    password); None for the operator's."""
    secret = secret or new_token()
    expires_at = utcnow() + timedelta(seconds=expires_in_seconds) if expires_in_seconds else None
    token = ApiToken(
        user_id=user.id,
        token_hash=hash_token(secret),
        prefix=display_prefix(secret),
        scopes=list(scopes),
        note=note,
        expires_at=expires_at,
        created_by=created_by,
        source=source,
    )
    session.add(token)
    session.flush()
    return token, secret


def token_not_found(token_id: str) -> NotFound:
    return NotFound(f"Token '{token_id}' not found")


def get_token(session: Session, user: UserProfile, token_id: str) -> ApiToken:
    if not _TOKEN_ID.fullmatch(token_id):
        raise token_not_found(token_id[:64])
    token = session.scalar(sa.select(ApiToken).where(ApiToken.id == token_id, ApiToken.user_id == user.id))
    if token is None:
        raise token_not_found(token_id)
    return token


def revoke_token(session: Session, token: ApiToken) -> ApiToken:
    """Revoke ``token`` (again revoking a revoked token changes nothing)."""
    if token.revoked_at is None:
        token.revoked_at = utcnow()
        session.flush()
    return token


def revoke_all(session: Session, user: UserProfile) -> int:
    """Revoke every live token of ``user``; how many were live."""
    result = session.execute(
        sa.update(ApiToken)
        .where(ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    return int(getattr(result, "rowcount", 0))


def revoke_descended(session: Session, user: UserProfile, source: str) -> list[str]:
    """Revoke every live token (and access key) of ``user`` whose lineage has ``source`` at its
    root; their ids (the caller ends the sessions started from them)."""
    live = [ApiToken.user_id == user.id, ApiToken.source == source, ApiToken.revoked_at.is_(None)]
    ids = list(session.scalars(sa.select(ApiToken.id).where(*live)))
    if ids:
        session.execute(sa.update(ApiToken).where(ApiToken.id.in_(ids)).values(revoked_at=utcnow()))
    return ids


def tokens_query(user: UserProfile) -> sa.Select[ApiToken]:
    return sa.select(ApiToken).where(ApiToken.user_id == user.id)


@dataclass(frozen=True, slots=True)
class TokenOwner:
    """What a valid token says about its bearer (plain values, no ORM objects)."""

    token_id: str
    scopes: tuple[str, ...]
    user_id: str
    user_name: str
    role: Role
    is_platform_admin: bool
    domain_id: str
    domain_name: str
    domain_settings: dict[str, Any]
    expires_at: datetime | None = None
    created_by: str | None = None
    is_access_key: bool = False
    source: str | None = None  # the root of its lineage (``ApiToken.source``)


_t, _u, _d = ApiToken.__table__.c, UserProfile.__table__.c, Domain.__table__.c
# One indexed lookup (token_hash is unique) joined to the owner and the owner's domain; plain Core
# columns, because this runs on every request.
_AUTH_QUERY = (
    sa.select(
        _t.id, _t.scopes, _t.expires_at, _t.revoked_at, _t.last_used_at, _t.created_by, _t.prefix,
        _t.source, _u.id, _u.name, _u.role, _u.is_platform_admin, _d.id, _d.name, _d.settings,
    )
    .select_from(ApiToken.__table__.join(UserProfile.__table__).join(Domain.__table__))
    .where(_t.token_hash == sa.bindparam("token_hash"))
)  # fmt: skip


def authenticate(
    session: Session,
    secret: str,
    *,
    touch_seconds: int = 60,
    now: datetime | None = None,
    read_only: bool = False,
    access_key: bool = False,
) -> TokenOwner:
    """The owner of the live token whose secret is ``secret``.

    Raises ``Unauthorized`` for unknown, revoked and expired tokens alike, and for an access key's
    secret unless ``access_key`` (the SigV4 path): that secret signs requests, it is never sent,
    so it is no bearer token and starts no console session. ``last_used_at`` is
    written at most every ``touch_seconds`` (and committed), so reads do not each cost a write;
    with ``read_only`` a due write raises ``WriteRequired`` instead.
    """
    now = now or utcnow()
    row = session.connection().execute(_AUTH_QUERY, {"token_hash": hash_token(secret)}).one_or_none()
    if row is None:
        raise Unauthorized("The token is not valid")
    token_id, scopes, expires_at, revoked_at, last_used_at, created_by, prefix, source, *owner = row
    is_access_key = bool(ACCESS_KEY_ID.fullmatch(prefix))
    if is_access_key and not access_key:
        raise Unauthorized(
            "That is an access key's secret: it signs AWS-style (SigV4) requests and is not a bearer "
            "token; use an API token"
        )
    if revoked_at is not None:
        raise Unauthorized("The token has been revoked")
    if expires_at is not None and expires_at <= now:
        raise Unauthorized("The token has expired")
    if last_used_at is None or now - last_used_at >= timedelta(seconds=touch_seconds):
        if read_only:
            raise WriteRequired("the token's last_used_at is due")
        session.execute(sa.update(ApiToken).where(ApiToken.id == token_id).values(last_used_at=now))
        session.commit()
    user_id, user_name, role, is_platform_admin, domain_id, domain_name, domain_settings = owner
    return TokenOwner(
        token_id, tuple(scopes), user_id, user_name, Role(role), is_platform_admin, domain_id, domain_name,
        domain_settings or {}, expires_at, created_by, is_access_key, source,
    )  # fmt: skip


__all__ = [
    "ACCESS_KEY_ID",
    "ACCESS_KEY_PREFIX",
    "ALL_SCOPES",
    "TokenOwner",
    "authenticate",
    "get_token",
    "issue_token",
    "revoke_all",
    "revoke_descended",
    "revoke_token",
    "token_not_found",
    "tokens_query",
]
