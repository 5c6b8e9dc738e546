"""Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP), for the local accounts' second
factor: what authenticator apps (Google Authenticator, Aegis, 1Password…) compute.

    secret = new_secret()                       # base32, 160 random bits (RFC 4226's advice)
    otpauth_url(secret, "research/alice", "ProfilerHub")  # what an app imports (or a QR code holds)
    step = verify(secret, "287082", now=time.time(), after=last_step)   # the step matched, or None

A code is the HOTP of the 30-second step counter, SHA-1, 6 digits (every app's defaults). ``verify``
accepts the step before and after the current one (clock skew) and only steps after ``after``, so a
code that was accepted once is refused the second time (the caller stores the step it returned).
"""

from __future__ import annotations

import base64
import hmac
import secrets
from urllib.parse import quote, urlencode

PERIOD = 30
DIGITS = 6
SKEW_STEPS = 1


def new_secret() -> str:
    return base64.b32encode(secrets.token_bytes(20)).decode("ascii")


def _key(secret: str) -> bytes:
    cleaned = secret.replace(" ", "").upper()
    return base64.b32decode(cleaned + "=" * (-len(cleaned) % 8))


def hotp(key: bytes, counter: int, digits: int = DIGITS, digest: str = "sha1") -> str:
    """RFC 4226 §5.3: HMAC of the 8-byte counter, dynamically truncated to ``digits`` digits."""
    mac = hmac.new(key, counter.to_bytes(8, "big"), digest).digest()
    offset = mac[-1] & 0x0F
    number = int.from_bytes(mac[offset : offset + 4], "big") & 0x7FFFFFFF
    return str(number % 10**digits).zfill(digits)


def code_at(secret: str, when: float, digits: int = DIGITS) -> str:
    """The code of base32 ``secret`` at Unix time ``when``."""
    return hotp(_key(secret), int(when) // PERIOD, digits)


def verify(secret: str, code: str, *, now: float, after: int | None = None) -> int | None:
    """The step ``code`` is valid for (within ``SKEW_STEPS`` of ``now``'s, and later than
    ``after``); None when it is not."""
    code = code.replace(" ", "")
    if len(code) != DIGITS or not code.isdigit():
        return None
    key, current = _key(secret), int(now) // PERIOD
    for step in range(current - SKEW_STEPS, current + SKEW_STEPS + 1):
        if (after is None or step > after) and hmac.compare_digest(hotp(key, step), code):
            return step
    return None


def otpauth_url(secret: str, account: str, issuer: str) -> str:
    """The ``otpauth://totp/…`` URL an authenticator app imports (Key Uri Format)."""
    label = quote(f"{issuer}:{account}", safe="")
    return f"otpauth://totp/{label}?" + urlencode({"secret": secret, "issuer": issuer, "period": PERIOD,
                                                    "digits": DIGITS, "algorithm": "SHA1"})  # fmt: skip


__all__ = ["DIGITS", "PERIOD", "code_at", "hotp", "new_secret", "otpauth_url", "verify"]
