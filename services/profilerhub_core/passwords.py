"""Local-account passwords: what a password must be, and how it is hashed.

Policy (NIST SP 800-63B's, no composition rules): at least ``min_length`` characters (12 by
default, ``PROFILERHUB_PASSWORD_MIN_LENGTH``), at most ``MAX_LENGTH``, not one of the 30,000 most
common passwords of real breaches (the list zxcvbn ships, compared case-insensitively, also with
trailing digits and punctuation stripped: ``Password123!`` is ``password``), and not the user's
or the domain's name.

Hashing: Argon2id through argon2-cffi (memory-hard; its RFC 9106 "low memory" defaults, 64 MiB
and 3 passes, ~50 ms here). A stored hash records its own parameters, so raising them later
needs no migration: ``needs_rehash`` says when a password checked against older ones should be
hashed again. A check for a user without a password still runs one hash (of a dummy), so the
answer's timing does not tell which user names have one.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from profilerhub_core.errors import InvalidInput

if TYPE_CHECKING:
    from argon2 import PasswordHasher

MAX_LENGTH = 256  # a sanity limit on what is hashed (long passphrases are fine)
_TRAILING = re.compile(r"[\d\W_]+$")


@functools.cache
def _common() -> frozenset[str]:
    """The common-password list, loaded on first use (about 2 MB; only sign-up and change need it)."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    return frozenset(str(p).lower() for p in FREQUENCY_LISTS["passwords"])


def check_password(password: str, *, min_length: int, names: tuple[str, ...] = ()) -> None:
    """Raise ``InvalidInput`` saying what is wrong with ``password``; return when it is acceptable."""
    if len(password) < min_length:
        raise InvalidInput(f"The password must have at least {min_length} characters")
    if len(password) > MAX_LENGTH:
        raise InvalidInput(f"The password must have at most {MAX_LENGTH} characters")
    lowered = password.lower()
    if lowered.strip() != lowered or not lowered.strip():
        raise InvalidInput("The password must not begin or end with spaces")
    stripped = _TRAILING.sub("", lowered)
    if lowered in _common() or stripped in _common() or len(set(lowered)) < 4:
        raise InvalidInput(
            "That password is one of the most common (breached-password lists have it); choose another"
        )
    if any(n and n.lower() in lowered for n in names):
        raise InvalidInput("The password must not contain your user or domain name")


@functools.cache
def _hasher() -> PasswordHasher:
    """argon2-cffi's hasher, imported by the first password checked, not by the hub's start."""
    from argon2 import PasswordHasher

    return PasswordHasher()


def hash_password(password: str) -> str:
    return _hasher().hash(password)


@functools.cache
def _dummy_hash() -> str:
    return hash_password("profilerhub: no password is set for this user")


def verify_password(stored: str | None, password: str) -> bool:
    """Whether ``password`` matches ``stored`` (None: no password; still costs one hash)."""
    from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

    try:
        return _hasher().verify(stored or _dummy_hash(), password[:MAX_LENGTH]) and stored is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    return _hasher().check_needs_rehash(stored)


__all__ = ["MAX_LENGTH", "check_password", "hash_password", "needs_rehash", "verify_password"]
