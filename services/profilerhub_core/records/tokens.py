"""API tokens: issue (secret returned once), list, revoke, and authenticate a bearer secret."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session, contains_eager

from profilerhub_core.db.models import ApiToken, UserProfile, utcnow
from profilerhub_core.errors import NotFound, Unauthorized
from profilerhub_core.security import display_prefix, hash_token, new_token

ALL_SCOPES = "*"
_TOKEN_ID = re.compile(r"[0-9a-f-]{1,36}")


def issue_token(
    session: Session,
    user: UserProfile,
    *,
    expires_in_seconds: int | None = None,
    note: str = "",
    scopes: Sequence[str] = (ALL_SCOPES,),
    secret: str | None = None,
) -> tuple[ApiToken, str]:
    """A new token for ``user``: the row and its secret (the only time the secret exists in clear)."""
    secret = secret or new_token()
    expires_at = utcnow() + timedelta(seconds=expires_in_seconds) if expires_in_seconds else None
    token = ApiToken(
        user_id=user.id,
        token_hash=hash_token(secret),
        prefix=display_prefix(secret),
        scopes=list(scopes),
        note=note,
        expires_at=expires_at,
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


def tokens_query(user: UserProfile) -> sa.Select[ApiToken]:
    return sa.select(ApiToken).where(ApiToken.user_id == user.id)


def authenticate(
    session: Session, secret: str, *, touch_seconds: int = 60, now: datetime | None = None
) -> tuple[ApiToken, UserProfile]:
    """The live token whose secret is ``secret`` and its user (with ``user.domain`` loaded).

    One indexed query. ``last_used_at`` is written at most every ``touch_seconds``, so reads do
    not each cost a write. Raises ``Unauthorized`` for unknown, revoked and expired tokens alike.
    """
    now = now or utcnow()
    row = session.execute(
        sa.select(ApiToken, UserProfile)
        .join(UserProfile, UserProfile.id == ApiToken.user_id)
        .join(UserProfile.domain)
        .options(contains_eager(UserProfile.domain))
        .where(ApiToken.token_hash == hash_token(secret))
    ).one_or_none()
    if row is None:
        raise Unauthorized("The token is not valid")
    token, user = row
    if token.revoked_at is not None:
        raise Unauthorized("The token has been revoked")
    if token.expires_at is not None and token.expires_at <= now:
        raise Unauthorized("The token has expired")
    if token.last_used_at is None or now - token.last_used_at >= timedelta(seconds=touch_seconds):
        session.execute(sa.update(ApiToken).where(ApiToken.id == token.id).values(last_used_at=now))
        token.last_used_at = now
        session.commit()
    return token, user


__all__ = [
    "ALL_SCOPES",
    "authenticate",
    "get_token",
    "issue_token",
    "revoke_token",
    "token_not_found",
    "tokens_query",
]
