"""The one HTTP client of the hub's API (``/api/v1``): one user agent, one error parser, one retry policy.

Three callers speak through it, each translating a failure into its own terms:

    profilerhub.hubclient.HubClient   the SDK's job protocol (HubError: retryable / fatal)
    profilerhub.cli.hubapi.Hub        the terminal's commands (CliFailure: a message and a hint)
    profilerhub_app.hub.HttpHub       the profiler app's owner-jobs list (Unauthorized / Unavailable)

    http = HubHTTP(url, token, component="sdk")
    answer = http.send("GET", "/api/v1/me")      # any status; HubUnreachable if nothing answered
    if answer.status_code >= 300:
        code, message = error_of(answer)           # the hub's {"error": {"code", "message"}}

``RETRY`` decides what is tried again, and when: a request the hub never received (no
connection) always; an idempotent one (GET, HEAD, PUT, DELETE, OPTIONS) also after a lost answer,
a 5xx, 408 or 429, honouring a short ``Retry-After``. A POST that may have arrived is never
repeated here (the callers that may repeat it, the SDK's uploader, do so later, with the same
policy: its ``retryable`` and its ``delay(..., patient=True)``, which waits up to
``patient_max_delay`` between the tries of a caller that tries again without end).

Standard library only at import (the SDK must import cheaply, ``tests/sdk/test_import.py``); the
server packages may import this module (``tests/test_import_graph.py``). ``httpx`` is imported
when a client is made. ``transport`` (an ``httpx`` transport) and ``client`` (any object with
``httpx.Client.request``'s signature, a ``TestClient`` too) are the seams tests use.
"""

from __future__ import annotations

import platform
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

API = "/api/v1"
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


def user_agent(component: str) -> str:
    """``profilerhub/<version> (<component>; python <x.y>)``: how every client of ours names itself."""
    from profilerhub import __version__

    python = ".".join(platform.python_version_tuple()[:2])
    return f"profilerhub/{__version__} ({component}; python {python})"


def error_of(answer: Any) -> tuple[str, str]:
    """The ``{"error": {"code", "message"}}`` of a failed answer, else ``("", its text)``."""
    try:
        err = answer.json().get("error") or {}
        return str(err.get("code", "")), str(err.get("message", ""))
    except (ValueError, AttributeError):
        text = str(getattr(answer, "text", "") or getattr(answer, "reason_phrase", "") or "")
        return "", text[:200].strip()


@dataclass(frozen=True)
class RetryPolicy:
    """Which failures are worth another try, how many tries, and how long between them."""

    attempts: int = 3
    """Tries of one request in all (the first included)."""
    first_delay: float = 0.2
    max_delay: float = 2.0
    """No wait is longer, ``Retry-After`` included (a longer one is the caller's to honour)."""
    patient_max_delay: float = 5.0
    """No wait of a caller that tries again without end (the SDK's background uploader) is longer."""

    @staticmethod
    def retryable(status: int) -> bool:
        """An answer that may be different next time: the hub failed or is overloaded."""
        return status >= 500 or status in (408, 429)

    def delay(self, attempt: int, retry_after: str | None = None, *, patient: bool = False) -> float:
        """Seconds to wait before try ``attempt + 1`` (``attempt`` counts from 1): doubling, with
        jitter, or the answer's ``Retry-After`` (seconds), never past ``max_delay`` (past
        ``patient_max_delay`` when ``patient``: a caller that never stops trying)."""
        ceiling = self.patient_max_delay if patient else self.max_delay
        if retry_after and retry_after.strip().isdigit():
            return min(float(retry_after), ceiling)
        base: float = min(self.first_delay * 2.0 ** (attempt - 1), ceiling)
        return base * (0.5 + random.random() / 2)


RETRY = RetryPolicy()


class HubUnreachable(Exception):
    """No answer from the hub (refused, timed out, reset), after the tries ``RETRY`` allows."""

    def __init__(self, url: str, cause: Exception) -> None:
        self.cause = cause
        self.message = f"cannot reach {url} ({type(cause).__name__}: {cause})"
        super().__init__(self.message)


class HubHTTP:
    """One hub, optionally one token, and the client that talks to it."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        component: str,
        timeout: float = 30.0,
        transport: Any = None,
        client: Any = None,
        retry: RetryPolicy = RETRY,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.retry = retry
        self._sleep = sleep
        self._headers = {"User-Agent": user_agent(component)}
        self._owned = client is None  # a client handed in is closed by whoever made it
        if client is None:
            import httpx

            client = httpx.Client(
                base_url=self.url,
                headers=self._headers,
                timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
                transport=transport,
            )
        self._client = client

    def close(self) -> None:
        if self._owned:
            self._client.close()

    def send(
        self,
        method: str,
        url: str,
        *,
        token: str | None = None,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        bare: bool = False,
    ) -> Any:
        """The hub's answer to one request, whatever its status, after the tries ``retry``
        allows; ``HubUnreachable`` when nothing answered. ``token`` stands in for the client's;
        ``bare``: no token at all (a presigned storage URL carries its own signature)."""
        import httpx

        sent = dict(self._headers)
        bearer = None if bare else (token or self.token)
        if bearer:
            sent["Authorization"] = f"Bearer {bearer}"
        sent.update(headers or {})
        # None, not {}: merging even no parameters re-encodes a URL's query (a presigned URL's
        # signature covers it as the store signed it).
        query = {k: v for k, v in (params or {}).items() if v is not None} or None
        method = method.upper()
        attempt = 0
        while True:
            attempt += 1
            last = attempt >= self.retry.attempts
            try:
                answer = self._client.request(
                    method, url, params=query, json=json, content=content, headers=sent
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # never reached the hub
                if last:
                    raise HubUnreachable(self.url, exc) from exc
                self._sleep(self.retry.delay(attempt))
                continue
            except httpx.TransportError as exc:  # it may have arrived: repeated only if idempotent
                if last or method not in IDEMPOTENT:
                    raise HubUnreachable(self.url, exc) from exc
                self._sleep(self.retry.delay(attempt))
                continue
            if last or method not in IDEMPOTENT or not self.retry.retryable(answer.status_code):
                return answer
            self._sleep(self.retry.delay(attempt, answer.headers.get("Retry-After")))


__all__ = ["API", "IDEMPOTENT", "RETRY", "HubHTTP", "HubUnreachable", "RetryPolicy", "error_of", "user_agent"]
