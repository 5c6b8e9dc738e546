"""The owner's jobs: ``GET api/jobs``, ``GET api/jobs/{job_id}`` and ``GET api/jobs/{job_id}/summary``.

Which jobs the owner has is the hub's to say, never storage's: the app asks the hub
(``GET /api/v1/apps/{app_id}/owner/jobs``, with the hub-signed token of the request it serves)
and shows exactly those jobs, with their status as the hub records it. Storage is read only under
``{domain_id}/{user_id}/jobs/{job_id}/`` for a job id the hub listed, by ids the hub gave, so
objects a deleted job, user or domain left behind (a crash between the row's delete and the
objects', swept later) are never shown, and a new user who takes a deleted user's name starts
with nothing.

The list is one page at a time, sorted and filtered by the hub in SQL (``limit``, ``next_token``,
``sort``, ``order``, ``name_contains``, ``status`` pass through), so an owner with thousands of
jobs costs one small query and a storage listing per job on the page, not per job owned. The
figures shown (duration, steps, GPUs, ranks) are the hub's, from the job row it sorts by; only a
Ready job ingested before the hub kept them has its ``processed/status.json`` read for them.

Other routes that read one job's objects go through :func:`owned_job` for the same check.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from profilerhub_core.errors import InvalidInput, NotFound, ProfilerHubError, Unauthorized, Unavailable
from profilerhub_core.outage import tracker
from profilerhub_core.storage import ObjectStore, layout, open_store
from profilerhub_core.storage.keys import validate_key
from profilerhub_core.storage.layout import STATUS, SUMMARY

JOBS = "jobs/"
HUB_TIMEOUT_SECONDS = 10.0
#: The list parameters the app passes on to the hub (``docs/app-api.md``).
LIST_PARAMS = ("limit", "next_token", "sort", "order", "name_contains", "status")
DEFAULT_LIMIT = 25
#: The figures ingest writes on the hub's job row for the list (``summary.job_facts``).
FACTS = ("steps", "ranks", "gpus", "duration_s")
HUB = tracker("hub")
"""The app's view of the hub (``profilerhub_core.outage``)."""


class HubRejected(InvalidInput):
    """The hub answered 400 or 422 to list parameters the app passed on (answered 400 with its message)."""


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


@dataclass(frozen=True)
class OwnedJob:
    """A job the hub says the owner has, and the store rooted at that owner's folder."""

    store: ObjectStore
    record: dict[str, Any]

    @property
    def job_id(self) -> str:
        return str(self.record["job_id"])

    def key(self, name: str) -> str:
        """The store key of ``name`` in this job's folder (``raw/…`` or ``processed/…``)."""
        return validate_key(f"{JOBS}{self.job_id}/{name}")


def _owner_store(state: Any, domain_id: str, user_id: str) -> ObjectStore:
    """The store rooted at ``{storage_url}/{domain_id}/{user_id}/`` (opened once, kept on ``state``)."""
    settings = state.settings
    if user_id != settings.owner_id:
        raise Unauthorized("the hub listed jobs of someone else")
    store: ObjectStore | None = getattr(state, "job_store", None)
    if store is None:
        if not settings.storage_url:
            raise NotFound("This app has no storage configured (PROFILERHUB_APP_STORAGE_URL)")
        root = settings.storage_url.rstrip("/") + "/" + layout.user_prefix(domain_id, user_id)
        store = state.job_store = open_store(root, s3_endpoint_url=settings.s3_endpoint_url or None)
    return store


def _token(request: Request) -> str:
    return request.headers.get("authorization", "").partition(" ")[2].strip()


def _page(request: Request, job_id: str | None = None) -> tuple[ObjectStore, dict[str, Any]]:
    query = None
    if job_id is None:
        query = {k: v for k in LIST_PARAMS if (v := request.query_params.get(k))}
        query.setdefault("limit", str(DEFAULT_LIMIT))
    doc = request.app.state.hub.owner_jobs(_token(request), job_id, query)
    store = _owner_store(request.app.state, str(doc.get("domain_id", "")), str(doc.get("user_id", "")))
    doc["items"] = [item for item in doc["items"] if isinstance(item, dict) and item.get("job_id")]
    return store, doc


def _listed(request: Request, job_id: str) -> tuple[ObjectStore, list[dict[str, Any]]]:
    store, doc = _page(request, job_id)
    return store, doc["items"]


def owned_job(request: Request, job_id: str) -> OwnedJob:
    """The owner's job ``job_id`` as the hub records it; ``NotFound`` when the hub lists no such job."""
    if "/" in job_id or not layout.is_id(job_id):
        raise NotFound(f"Job '{job_id}' not found")
    store, items = _listed(request, job_id)
    for item in items:
        if item["job_id"] == job_id:
            return OwnedJob(store, item)
    raise NotFound(f"Job '{job_id}' not found")


def _json(store: ObjectStore, key: str) -> dict[str, Any]:
    try:
        doc = json.loads(store.get(key))
    except (NotFound, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _describe(store: ObjectStore, record: dict[str, Any]) -> dict[str, Any]:
    """One job of the list: the hub's record, plus what its folder holds."""
    job_id = str(record["job_id"])
    folder = f"{JOBS}{job_id}/"
    keys, total, first = set(), 0, None
    for info in store.list(folder):
        keys.add(info.key.removeprefix(folder))
        total += info.size
        first = info.modified if first is None else min(first, info.modified)
    status = record.get("status", "InProgress")
    facts = {k: record.get(k) for k in FACTS}  # the hub's row (what it sorts by)
    if status == "Ready" and all(v is None for v in facts.values()):
        # a job ingested before the hub kept these: what ingest wrote in its folder
        written = _json(store, f"{folder}processed/{STATUS}").get("facts")
        if isinstance(written, dict):
            facts = {k: written.get(k) for k in FACTS}
    return {
        "job_id": job_id,
        "name": record.get("name"),
        "status": status,
        "failure_reason": record.get("failure_reason"),
        "warnings": list(record.get("warnings") or []),
        # the hub's stamp of the move to Ready/Failed (what the list's "Finished" sorts by)
        "finished_at": record.get("updated_at") if status in ("Ready", "Failed") else None,
        "created_at": record.get("created_at"),
        "first_upload_at": first.isoformat() if first is not None else record.get("created_at"),
        "raw_files": sum(1 for k in keys if k.startswith("raw/")),
        "bytes": total,
        "has_summary": f"processed/{SUMMARY}" in keys,
        # what ingest found for the list (steps, ranks, GPUs, duration); None until Ready
        **facts,
    }


def list_jobs(request: Request) -> dict[str, Any]:
    """One page of the owner's jobs as the hub lists them (newest first unless sorted), with what
    storage holds of each: ``{"items", "next_token", "total", "status_counts"}``."""
    store, doc = _page(request)
    return {
        "items": [_describe(store, item) for item in doc["items"]],
        "next_token": doc.get("next_token"),
        "total": doc.get("total", len(doc["items"])),
        "status_counts": doc.get("status_counts", {}),
    }


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def error_response(exc: ProfilerHubError) -> JSONResponse:
    """The error shape for what the job routes raise."""
    if isinstance(exc, Unauthorized):
        return _error(401, "Unauthorized", exc.message)
    if isinstance(exc, NotFound | InvalidInput):
        return _error(404, "ResourceNotFound", exc.message)
    return _error(503, "ServiceUnavailable", exc.message)


async def jobs(request: Request) -> Response:
    """``{"items": [...], "next_token", "total", "status_counts", "listed_at"}``: one page."""
    try:
        page = await run_in_threadpool(list_jobs, request)
    except HubRejected as exc:
        return _error(400, "InvalidInput", exc.message)
    except ProfilerHubError as exc:
        return error_response(exc)
    return JSONResponse({**page, "listed_at": datetime.now().astimezone().isoformat()})


def _one(request: Request, job_id: str) -> dict[str, Any]:
    job = owned_job(request, job_id)
    return _describe(job.store, job.record)


async def one_job(request: Request) -> Response:
    """One job as the list shows it (the dashboard of a job still running polls this)."""
    try:
        item = await run_in_threadpool(_one, request, request.path_params["job_id"])
    except ProfilerHubError as exc:
        return error_response(exc)
    return JSONResponse(item)


def _summary(request: Request, job_id: str) -> bytes:
    job = owned_job(request, job_id)
    if job.record.get("status") != "Ready":
        raise NotFound("not Ready")
    return job.store.get(job.key(f"processed/{SUMMARY}"))


async def job_summary(request: Request) -> Response:
    """The job's ``processed/summary.json`` as stored (404 until ingest made it Ready)."""
    job_id: str = request.path_params["job_id"]
    try:
        data = await run_in_threadpool(_summary, request, job_id)
    except (NotFound, InvalidInput):
        return _error(404, "ResourceNotFound", f"Job '{job_id}' has no summary (not found, or not Ready yet)")
    except ProfilerHubError as exc:
        return error_response(exc)
    return Response(content=data, media_type="application/json")


def routes(api_base: str) -> list[Route]:
    """The job routes under ``api_base`` (the app's ``/apps/{id}/api``)."""
    return [
        Route(f"{api_base}/jobs", jobs, methods=["GET"]),
        Route(f"{api_base}/jobs/{{job_id}}", one_job, methods=["GET"]),
        Route(f"{api_base}/jobs/{{job_id}}/summary", job_summary, methods=["GET"]),
    ]
