"""Rate limits on what an attacker would repeat: sign-in attempts, presigned-link redemptions and
failed API-token checks, counted per client address in fixed windows.

    limits = RateLimits(settings, redis, sessions)
    limits.hit(SIGNIN, address)              # counts one attempt; Throttled (429) past the limit
    limits.check(TOKEN_FAILURES, address)    # Throttled if the address already failed too often
    limits.hit(TOKEN_FAILURES, address)      # ... and count a failure after one

Counting: one counter per (bucket, address) per window of ``rate_limit_window_seconds``, in Redis
(``SET key 0 EX window NX`` then ``INCR``, one round trip), so every hub process sharing the Redis
counts together and the limit holds across replicas. Without Redis, or while it is unreachable,
each process counts alone: the limit is then per process (N processes let N times as many
through), which still stops a brute force; the outage is logged (``profilerhub_hub.shared``).

Whose address: the peer's (``client_address``); ``X-Forwarded-For`` only when the peer is one of
``trusted_proxies``. A valid API token is never refused for its address's failures: past the
limit only the address's bad tokens answer 429 (so one NAT address cannot lock out a team).

A refusal answers 429 ``ThrottlingException`` with ``Retry-After`` (seconds to the window's end).
The first refusal of a window is audited (action ``RateLimited``, target the address); the ones
after it are not, so a flood cannot turn into a flood of audit rows.
"""

from __future__ import annotations

import functools
import ipaddress
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session, sessionmaker
from starlette.requests import HTTPConnection

from profilerhub_core.errors import Throttled
from profilerhub_core.records import audit
from profilerhub_core.settings import Settings
from profilerhub_hub.shared import Fallback, shared_key
from profilerhub_hub.tokencache import KEEPS_TOKEN_CACHE

log_fallback = Fallback("rate limits count per process until it is back")


@dataclass(frozen=True, slots=True)
class Bucket:
    name: str
    limit_of: Callable[[Settings], int]
    message: str


SIGNIN = Bucket("signin", lambda s: s.rate_limit_signin, "Too many sign-in attempts from your address")
PRESIGNED = Bucket(
    "presigned", lambda s: s.rate_limit_presigned, "Too many sign-in links opened from your address"
)
TOKEN_FAILURES = Bucket(
    "token-failures", lambda s: s.rate_limit_token_failures, "Too many failed token checks from your address"
)
# Wrong passwords, counted per account and per address: past a limit only password sign-ins (to
# that account, from that address) are refused; tokens, sessions and other accounts are not.
PASSWORD_ACCOUNT = Bucket(
    "password-account",
    lambda s: s.rate_limit_password_failures_account,
    "Too many wrong passwords for this account",
)
PASSWORD_ADDRESS = Bucket(
    "password-address",
    lambda s: s.rate_limit_password_failures_address,
    "Too many wrong passwords from your address",
)
BUCKETS = (SIGNIN, PRESIGNED, TOKEN_FAILURES, PASSWORD_ACCOUNT, PASSWORD_ADDRESS)


def client_address(connection: HTTPConnection) -> str:
    """The client's address: the peer's, unless the peer is one of ``trusted_proxies``; then the
    nearest address of ``X-Forwarded-For`` (read right to left) that is not a trusted proxy.
    Anyone else's ``X-Forwarded-For`` is ignored (the hub runs uvicorn without proxy headers)."""
    peer = connection.client.host if connection.client else "unknown"
    settings: Settings = connection.app.state.services.settings  # HubServices (it imports this module)
    if not settings.trusted_proxies or not _trusted(peer, tuple(settings.trusted_proxies)):
        return peer
    forwarded = ",".join(connection.headers.getlist("x-forwarded-for"))
    hops = [h.strip() for h in forwarded.split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, tuple(settings.trusted_proxies)):
            return hop[:64] if _address(hop) is not None else peer
    return hops[0][:64] if hops and _address(hops[0]) is not None else peer


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


@functools.lru_cache(maxsize=1024)
def _trusted(host: str, networks: tuple[str, ...]) -> bool:
    address = _address(host)
    return address is not None and any(address in ipaddress.ip_network(net, strict=False) for net in networks)


class _LocalCounters:
    """The per-process fallback: fixed windows in a dict, expired entries dropped as it grows."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self._counts: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def add(self, key: str, window: int, amount: int) -> tuple[int, int]:
        now = time.monotonic()
        with self._lock:
            count, ends = self._counts.get(key, (0, now + window))
            if ends <= now:
                count, ends = 0, now + window
            count += amount
            if amount:
                if len(self._counts) >= self.max_entries:
                    self._counts = {k: v for k, v in self._counts.items() if v[1] > now}
                self._counts[key] = (count, ends)
            return count, max(1, int(ends - now + 0.999))


class RateLimits:
    """The hub's rate limits (one per process, ``HubServices.rate_limits``)."""

    def __init__(self, settings: Settings, redis: Any | None, sessions: sessionmaker[Session]) -> None:
        self.settings = settings
        self.redis = redis
        self.sessions = sessions
        self.local = _LocalCounters()

    def hit(self, bucket: Bucket, address: str) -> None:
        """Count one attempt of ``bucket`` from ``address``; ``Throttled`` once past the limit."""
        self._counted(bucket, address, 1)

    def check(self, bucket: Bucket, address: str) -> None:
        """``Throttled`` if ``address`` has used up ``bucket`` in this window (counts nothing)."""
        self._counted(bucket, address, 0)

    def _counted(self, bucket: Bucket, address: str, amount: int) -> None:
        limit = bucket.limit_of(self.settings)
        if limit <= 0:
            return
        key = f"{bucket.name}:{address}"
        count, retry_after = self._add(key, amount)
        if count <= limit if amount else count < limit:
            return
        if not amount:  # a refused check counts too, so that the first refusal is the one audited
            count, retry_after = self._add(key, 1)
        if count == limit + 1:
            self._audit(bucket, address, retry_after)
        raise Throttled(f"{bucket.message}; try again in {retry_after} s", retry_after)

    def _add(self, key: str, amount: int) -> tuple[int, int]:
        window = self.settings.rate_limit_window_seconds
        if self.redis is not None:
            name = shared_key(self.settings, "ratelimit", key)
            try:
                with self.redis.pipeline(transaction=True) as pipe:
                    if amount:
                        pipe.set(name, 0, ex=window, nx=True)
                        pipe.incrby(name, amount)
                    else:
                        pipe.get(name)
                    pipe.ttl(name)
                    *_, count, ttl = pipe.execute()
            except Exception as exc:  # Redis down: count here rather than not at all
                log_fallback.note(exc)
            else:
                log_fallback.answered()
                return int(count or 0), int(ttl) if ttl and ttl > 0 else window
        return self.local.add(key, window, amount)

    def _audit(self, bucket: Bucket, address: str, retry_after: int) -> None:
        with self.sessions() as session:
            session.info[KEEPS_TOKEN_CACHE] = True
            audit.record_audit(
                session, actor="anonymous", action="RateLimited", target_type="Client", target=address,
                outcome=audit.DENIED, detail={"limit": bucket.name, "retry_after_seconds": retry_after},
            )  # fmt: skip
            session.commit()


__all__ = [
    "BUCKETS",
    "PASSWORD_ACCOUNT",
    "PASSWORD_ADDRESS",
    "PRESIGNED",
    "SIGNIN",
    "TOKEN_FAILURES",
    "Bucket",
    "RateLimits",
    "client_address",
]
