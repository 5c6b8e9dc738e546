"""How a webhook's body is signed, and how a receiver checks it.

Each delivery carries ``X-ProfilerHub-Signature: t=<unix seconds>,v1=<hex>`` where ``<hex>`` is
HMAC-SHA256, keyed with the webhook's secret, of ``"<t>." + body`` (the raw bytes as sent). The
receiver recomputes it over the body it read, compares in constant time, and refuses a ``t`` too
far from its clock (a replayed old delivery); ``verify`` does all three. The same scheme as
Stripe's, so existing verifiers need only the header's name.
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "X-ProfilerHub-Signature"
EVENT_HEADER = "X-ProfilerHub-Event"
DELIVERY_HEADER = "X-ProfilerHub-Delivery"


def _mac(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The ``X-ProfilerHub-Signature`` value for ``body`` at ``timestamp`` (default now)."""
    t = int(time.time()) if timestamp is None else timestamp
    return f"t={t},v1={_mac(secret, t, body)}"


def verify(
    secret: str, body: bytes, header: str, *, tolerance_s: float = 300, now: float | None = None
) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` within ``tolerance_s`` of ``now``."""
    fields: dict[str, list[str]] = {}
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        fields.setdefault(key, []).append(value)
    try:
        t = int(fields["t"][0])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - t) > tolerance_s:
        return False
    expected = _mac(secret, t, body)
    return any(hmac.compare_digest(expected, v) for v in fields.get("v1", []))


__all__ = ["DELIVERY_HEADER", "EVENT_HEADER", "SIGNATURE_HEADER", "sign", "verify"]
