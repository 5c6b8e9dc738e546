"""AWS-style access keys (for SigV4-signed requests): issue, list, revoke, authenticate.

An access key is an API token whose secret is *derived*, not random:

    access_key_id      PHAK + 12 random base32 characters (public, like AWS's AKIA...)
    secret_access_key  base64(HMAC-SHA256(hub signing key, "access-key:" + access_key_id))[:40]

SigV4 needs the secret in clear on the server (the signature is an HMAC keyed by it), so a hashed
secret alone cannot check one. Deriving it means the database still holds only the sha256 of
the secret (``ApiToken.token_hash``, as for every token): a copy of the database yields no key,
and the hub recomputes the secret from the key id and its signing key when a request arrives.
Rotating the hub's ``secret_key`` therefore invalidates every access key (as it does presigned
URLs and page tokens).

Because the row is an ``ApiToken``, revocation, expiry, scopes and ``last_used_at`` are the
token's: the key's user is the caller, with the same permissions as their REST token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import ApiToken, UserProfile
from profilerhub_core.errors import NotFound, Unauthorized
from profilerhub_core.records import tokens

ACCESS_KEY_PREFIX, ACCESS_KEY_ID = tokens.ACCESS_KEY_PREFIX, tokens.ACCESS_KEY_ID
_BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
NOTE_PREFIX = "access key"


def new_access_key_id() -> str:
    return ACCESS_KEY_PREFIX + "".join(secrets.choice(_BASE32) for _ in range(12))


def access_secret(signing_key: bytes, access_key_id: str) -> str:
    """The secret access key of ``access_key_id`` (40 characters, like AWS's)."""
    digest = hmac.new(signing_key, b"access-key:" + access_key_id.encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()[:40]


def issue_access_key(
    session: Session,
    user: UserProfile,
    signing_key: bytes,
    *,
    note: str = "",
    scopes: Sequence[str] = (tokens.ALL_SCOPES,),
    created_by: str | None = None,
    source: str | None = None,
) -> tuple[ApiToken, str]:
    """A new access key for ``user``: the row (``prefix`` is the key id) and the secret (flushed).
    ``created_by``, ``source``: as for tokens (who made it when not ``user``, so the key
    impersonates ``user``; its lineage's root)."""
    key_id = new_access_key_id()
    secret = access_secret(signing_key, key_id)
    token, _ = tokens.issue_token(
        session, user, note=f"{NOTE_PREFIX}: {note}" if note else NOTE_PREFIX, scopes=scopes, secret=secret,
        created_by=created_by, source=source,
    )  # fmt: skip
    token.prefix = key_id
    session.flush()
    return token, secret


def access_keys_query(user: UserProfile) -> sa.Select[ApiToken]:
    return tokens.tokens_query(user).where(ApiToken.prefix.like(ACCESS_KEY_PREFIX + "%"))


def access_key_not_found(access_key_id: str) -> NotFound:
    return NotFound(f"Access key '{access_key_id[:20]}' not found")


def get_access_key(session: Session, user: UserProfile, access_key_id: str) -> ApiToken:
    if not ACCESS_KEY_ID.fullmatch(access_key_id):
        raise access_key_not_found(access_key_id)
    token = session.scalar(access_keys_query(user).where(ApiToken.prefix == access_key_id))
    if token is None:
        raise access_key_not_found(access_key_id)
    return token


def authenticate_access_key(
    session: Session,
    signing_key: bytes,
    access_key_id: str,
    *,
    touch_seconds: int = 60,
    read_only: bool = False,
) -> tuple[tokens.TokenOwner, str]:
    """The owner of the live access key ``access_key_id`` and its secret (to check the signature
    with). ``Unauthorized`` for malformed, unknown, revoked and expired keys alike."""
    if not ACCESS_KEY_ID.fullmatch(access_key_id):
        raise Unauthorized("The security token included in the request is invalid.")
    secret = access_secret(signing_key, access_key_id)
    try:
        owner = tokens.authenticate(
            session, secret, touch_seconds=touch_seconds, read_only=read_only, access_key=True
        )
    except Unauthorized as refused:
        raise Unauthorized(
            f"The security token included in the request is invalid. ({refused.message})"
        ) from None
    return owner, secret


__all__ = [
    "ACCESS_KEY_ID",
    "ACCESS_KEY_PREFIX",
    "access_key_not_found",
    "access_keys_query",
    "access_secret",
    "authenticate_access_key",
    "get_access_key",
    "issue_access_key",
    "new_access_key_id",
]
