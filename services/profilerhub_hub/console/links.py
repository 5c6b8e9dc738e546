"""Presigned sign-in links (SageMaker's ``CreatePresignedDomainUrl``): make one, redeem it once.

A link carries, signed with the hub's key: the user, who made it if not the user (impersonation),
the scopes its session gets, its own expiry, the session's lifetime, where it lands (``console``
or ``app``), a random nonce, and its lineage (``records.sessions.Source``: the root credential's
kind and token, the session it was made in, when it was issued), so that redeeming it after its
source was revoked, expired or signed out everywhere is refused. Redeeming it starts a browser
session whose row keeps the nonce under a unique constraint: a second use fails in the database,
across every hub process.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

from profilerhub_core.errors import InvalidInput, Unauthorized
from profilerhub_core.pagination import decode_page_token, encode_page_token
from profilerhub_core.records.sessions import Source, from_micros, micros
from profilerhub_core.settings import Settings

LINK_SCOPE = "signin-link"
REDEEM_PATH = "/console/presigned"


@dataclass(frozen=True, slots=True)
class SignInLink:
    user_id: str
    impersonated_by: str | None
    scopes: tuple[str, ...]
    expires: int
    session_seconds: int
    landing: str
    nonce: str
    source: Source


def make_link(
    settings: Settings,
    *,
    user_id: str,
    impersonated_by: str | None,
    scopes: Sequence[str],
    expires_in_seconds: int,
    session_seconds: int,
    landing: str,
    source: Source,
) -> tuple[str, int]:
    """The link's URL and its expiry (unix seconds)."""
    issued = source.issued_at or datetime.now(UTC)
    expires = int(issued.timestamp()) + expires_in_seconds
    values = [user_id, impersonated_by or "", list(scopes), expires, session_seconds, landing,
              secrets.token_hex(16), source.token_id or "", source.parent_id or "", source.kind,
              micros(issued)]  # fmt: skip
    token = encode_page_token(settings.signing_key(), LINK_SCOPE, values)
    return f"{settings.public_url}{REDEEM_PATH}?token={quote(token)}", expires


def read_link(settings: Settings, token: str) -> SignInLink:
    """The link behind ``token``; ``Unauthorized`` when it is forged, malformed or expired."""
    try:
        values = decode_page_token(settings.signing_key(), LINK_SCOPE, token)
    except InvalidInput:
        values = []
    if len(values) != 11 or not all(isinstance(values[i], int) for i in (3, 4, 10)):
        raise Unauthorized("This sign-in link is not valid; ask for a new one")
    user_id, by, scopes, expires, session_seconds, landing, nonce, token_id, parent_id, kind, issued = values
    if expires < time.time():
        raise Unauthorized("This sign-in link has expired; ask for a new one")
    source = Source(str(kind), str(token_id) or None, str(parent_id) or None, from_micros(issued))
    return SignInLink(
        str(user_id), str(by) or None, tuple(str(s) for s in scopes), expires, session_seconds,
        str(landing), str(nonce), source,
    )  # fmt: skip


__all__ = ["LINK_SCOPE", "REDEEM_PATH", "SignInLink", "make_link", "read_link"]
