"""How the app asks the hub which jobs its owner has: the :class:`HubJobs` seam and its HTTP client.

Which jobs the owner has is the hub's to say, never storage's: the app asks
``GET /api/v1/apps/{app_id}/owner/jobs`` with the hub-signed token of the request it serves, and
shows exactly what the hub lists (``profilerhub_app.owned`` reads storage for those jobs only).
For one job it also asks the hub what only the hub does (``owner_job``): the job's log
(``GET …/owner/jobs/{job_id}/logs``), and the dashboard's Stop and Capture buttons
(``POST …/stop``, ``POST …/captures``), which the hub answers as its REST routes do.
Tests pass an in-process hub (``HttpHub(..., client=TestClient)``) or any other :class:`HubJobs`.
It speaks through the one client of the hub's API (``profilerhub.hubhttp.HubHTTP``: its user
agent, error parser and retry policy, the SDK's and the CLI's too).
"""

from __future__ import annotations

from typing import Any, Protocol

from profilerhub.hubhttp import API, HubHTTP, HubUnreachable, error_of
from profilerhub_core.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    ProfilerHubError,
    Unauthorized,
    Unavailable,
)
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

    def owner_job(
        self,
        token: str,
        job_id: str,
        what: str,
        *,
        method: str = "GET",
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The hub's answer to ``method …/owner/jobs/{job_id}/{what}`` (``logs``, ``stop``,
        ``captures``); its refusal raised as the hub's error (``NotFound``, ``Conflict``, …)."""
        ...


class HttpHub:
    """:class:`HubJobs` over HTTP to ``base_url`` (the hub as apps reach it)."""

    def __init__(self, base_url: str, app_id: str, client: Any = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.app_id = app_id
        self._client = client
        self._hub: HubHTTP | None = None

    def _http(self) -> HubHTTP:
        if self._hub is None:  # made on first use: an app that never lists jobs opens no client
            self._hub = HubHTTP(
                self.base_url, component="app", timeout=HUB_TIMEOUT_SECONDS, client=self._client
            )
        return self._hub

    def _send(self, method: str, path: str, token: str, **request: Any) -> Any:
        if not self.base_url:
            raise Unavailable("This app does not know where the hub is (PROFILERHUB_APP_HUB_API_URL)")
        url = f"{self.base_url}{API}/apps/{self.app_id}/owner/jobs{path}"
        try:
            answer = self._http().send(method, url, token=token, **request)
        except HubUnreachable as exc:  # the hub is unreachable for now
            HUB.failed(exc.cause)  # one line when the hub stops answering, one when it answers again
            name = type(exc.cause).__name__
            raise Unavailable(f"The hub did not answer ({name}); try again shortly") from exc
        HUB.recovered()
        return answer

    def owner_jobs(
        self, token: str, job_id: str | None = None, query: dict[str, str] | None = None
    ) -> dict[str, Any]:
        params = {**(query or {}), **({"job_id": job_id} if job_id else {})}
        answer = self._send("GET", "", token, params=params)
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

    def owner_job(
        self,
        token: str,
        job_id: str,
        what: str,
        *,
        method: str = "GET",
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        answer = self._send(method, f"/{job_id}/{what}", token, params=params, json=body)
        if answer.status_code in (200, 201, 202):
            doc = answer.json()
            if isinstance(doc, dict):
                return doc
            raise Unavailable(f"The hub's answer to {what} was not understood")
        message = error_of(answer)[1] or f"the hub answered HTTP {answer.status_code}"
        refusal = _REFUSALS.get(answer.status_code)
        if refusal is None:
            raise Unavailable(f"The hub could not answer ({message}); try again shortly")
        raise refusal(message)


#: The hub's refusals of a job request, raised as the same errors (answered with the same status).
_REFUSALS: dict[int, type[ProfilerHubError]] = {
    400: InvalidInput,
    401: Unauthorized,
    404: NotFound,
    409: Conflict,
    422: InvalidInput,
}


def _message(answer: Any) -> str:
    return error_of(answer)[1] or "the hub refused the list parameters"


__all__ = ["HUB", "HttpHub", "HubJobs", "HubRejected"]
