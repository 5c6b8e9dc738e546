"""The owner's jobs, read from storage alone: ``GET api/jobs`` and ``GET api/jobs/{job_id}/summary``.

The app holds no database URL and no user token, so it reads what ingest leaves in storage: it
opens the store *rooted at its owner's folder* (``{storage_url}/{domain}/{owner}/``), so every
key it can name is inside that prefix. A job is a folder ``jobs/{job_id}/``; its status comes
from ``processed/status.json`` (written when ingest ends: ``Ready`` or ``Failed`` with the
reason), and a job without one is still ``InProgress`` (uploading or being processed). The name
is in ``status.json``, or the SDK's ``raw/job.json`` before that. The hub's database stays the
source of truth; a deleted job's objects are gone, so it disappears here too.

Listing walks every object under ``jobs/`` (one ``list`` call per 1000 objects on S3); fine
for hundreds of jobs, an index is the next step beyond that.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from profilerhub_core.errors import InvalidInput, NotFound
from profilerhub_core.storage import ObjectStore, layout, open_store
from profilerhub_core.storage.layout import STATUS, SUMMARY

JOBS = "jobs/"


def owner_store(state: Any) -> ObjectStore:
    """The store rooted at the owner's folder (opened on first use, kept on ``app.state``)."""
    store: ObjectStore | None = getattr(state, "job_store", None)
    if store is None:
        settings = state.settings
        if not settings.storage_url:
            raise NotFound("This app has no storage configured (PROFILERHUB_APP_STORAGE_URL)")
        root = settings.storage_url.rstrip("/") + "/" + layout.user_prefix(settings.domain, settings.owner)
        store = state.job_store = open_store(root, s3_endpoint_url=settings.s3_endpoint_url or None)
    return store


def _json(store: ObjectStore, key: str) -> dict[str, Any]:
    try:
        doc = json.loads(store.get(key))
    except (NotFound, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def list_jobs(store: ObjectStore) -> list[dict[str, Any]]:
    """The owner's jobs, newest first, with what storage tells about each."""
    found: dict[str, dict[str, Any]] = {}
    for info in store.list(JOBS):
        job_id, _, rest = info.key.removeprefix(JOBS).partition("/")
        job = found.setdefault(job_id, {"job_id": job_id, "first": info.modified, "keys": set(), "bytes": 0})
        job["first"] = min(job["first"], info.modified)
        job["keys"].add(rest)
        job["bytes"] += info.size
    out = []
    for job_id, job in found.items():
        keys: set[str] = job["keys"]
        status = _json(store, f"{JOBS}{job_id}/processed/{STATUS}") if f"processed/{STATUS}" in keys else {}
        name = status.get("name") or (
            _json(store, f"{JOBS}{job_id}/raw/job.json").get("job") if "raw/job.json" in keys else None
        )
        out.append(
            {
                "job_id": job_id,
                "name": name,
                "status": status.get("status", "InProgress"),
                "failure_reason": status.get("failure_reason"),
                "finished_at": status.get("finished_at"),
                "first_upload_at": job["first"].isoformat(),
                "raw_files": sum(1 for k in keys if k.startswith("raw/")),
                "bytes": job["bytes"],
                "has_summary": f"processed/{SUMMARY}" in keys,
                **{k: status.get("facts", {}).get(k) for k in ("steps", "ranks", "gpus", "duration_s")},
            }
        )
    out.sort(key=lambda j: j["first_upload_at"], reverse=True)
    return out


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def jobs(request: Request) -> Response:
    """``{"items": [...]}``: every job of the owner, newest first."""
    try:
        items = await run_in_threadpool(list_jobs, owner_store(request.app.state))
    except NotFound as exc:
        return _error(404, "ResourceNotFound", exc.message)
    return JSONResponse({"items": items, "listed_at": datetime.now().astimezone().isoformat()})


async def job_summary(request: Request) -> Response:
    """The job's ``processed/summary.json`` as stored (404 until ingest made it Ready)."""
    job_id: str = request.path_params["job_id"]
    try:
        store = owner_store(request.app.state)
        key = layout.validate_key(f"{JOBS}{job_id}/processed/{SUMMARY}")
        if "/" in job_id:
            raise InvalidInput("a job id has no '/'")
        data = await run_in_threadpool(store.get, key)
    except (NotFound, InvalidInput):
        return _error(404, "ResourceNotFound", f"Job '{job_id}' has no summary (not found, or not Ready yet)")
    return Response(content=data, media_type="application/json")


def routes(api_base: str) -> list[Route]:
    """The job routes under ``api_base`` (the app's ``/apps/{id}/api``)."""
    return [
        Route(f"{api_base}/jobs", jobs, methods=["GET"]),
        Route(f"{api_base}/jobs/{{job_id}}/summary", job_summary, methods=["GET"]),
    ]
