"""How the app asks the hub which jobs its owner has: the :class:`HubJobs` seam and its HTTP client.

Which jobs the owner has is the hub's to say, never storage's: the app asks
``GET /api/v1/apps/{app_id}/owner/jobs`` with the hub-signed token of the request it serves, and
shows exactly what the hub lists (``profilerhub_app.owned`` reads storage for those jobs only).
Tests pass an in-process hub (``HttpHub(..., client=TestClient)``) or any other :class:`HubJobs`.
"""

from __future__ import annotations

from typing import Any, Protocol

from profilerhub_core.errors import InvalidInput, Unauthorized, Unavailable
from profilerhub_core.outage import tracker

HUB_TIMEOUT_SECONDS = 10.0
HUB = tracker("hub")
"""The app's view of the hub (``profilerhub_core.outage``)."""


class HubRejected(InvalidInput):
    """The hub answered 400 or 422 to list parameters the app passed on (answered 400, as the hub did)."""


class HubJobs(Protocol):
    """How the app asks the hub for its owner's jobs (a seam: tests pass an in-process hub)."""

    def owner_jobs(
        self, token: str, job_id: str | None = None, query: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """``{"domain_id", "user_id", "items": [...], "next_token", "total", "status_counts"}``
        (``query``: the list parameters); ``Unauthorized``/``Unavailable``/``HubRejected`` on failure."""
        ...


class HttpHub:
    """:class:`HubJobs` over HTTP to ``base_url`` (the hub as apps reach it)."""

    def __init__(self, base_url: str, app_id: str, client: Any = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.app_id = app_id
        self._client = client

    def _http(self) -> Any:
        if self._client is None:
            import httpx

            self._client = httpx.Client(timeout=HUB_TIMEOUT_SECONDS)
        return self._client

    def owner_jobs(
        self, token: str, job_id: str | None = None, query: dict[str, str] | None = None
    ) -> dict[str, Any]:
        if not self.base_url:
            raise Unavailable("This app does not know where the hub is (PROFILERHUB_APP_HUB_API_URL)")
        url = f"{self.base_url}/api/v1/apps/{self.app_id}/owner/jobs"
        try:
            answer = self._http().get(
                url,
                headers={"Authorization": f"Bearer {token}"},
                params={**(query or {}), **({"job_id": job_id} if job_id else {})},
            )
        except Exception as exc:  # any transport error: the hub is unreachable for now
            HUB.failed(exc)  # one line when the hub stops answering, one when it answers again
            raise Unavailable(f"The hub did not answer ({type(exc).__name__}); try again shortly") from exc
        HUB.recovered()
        if answer.status_code == 401:
            raise Unauthorized("the hub refused this app's token")
        if answer.status_code in (400, 422):
            raise HubRejected(_message(answer))
        if answer.status_code != 200:
            raise Unavailable(
                f"The hub could not list the jobs (HTTP {answer.status_code}); try again shortly"
            )
        doc = answer.json()
        if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
            raise Unavailable("The hub's job list was not understood")
        return doc


def _message(answer: Any) -> str:
    try:
        return str(answer.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return "the hub refused the list parameters"


__all__ = ["HUB", "HttpHub", "HubJobs", "HubRejected"]
