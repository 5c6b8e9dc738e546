"""API token secrets: generated with 256 bits of entropy, stored only as a sha256 hash.

A token looks like ``phk_<43 url-safe characters>``. The hash is what the database indexes, so
checking a token is one indexed lookup; the secret itself is never stored or logged.
"""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "phk_"


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def display_prefix(token: str) -> str:
    """The first characters of a token, kept so people can tell their tokens apart."""
    return token[: len(TOKEN_PREFIX) + 6]


__all__ = ["TOKEN_PREFIX", "display_prefix", "hash_token", "new_token"]
