"""The owner's jobs: ``GET api/jobs``, ``GET api/jobs/{job_id}`` and ``GET api/jobs/{job_id}/summary``.

Thin: the list and the jobs are the hub's, with what storage holds of each
(:class:`profilerhub_app.owned.OwnedJobs`, whose docstring says what is read and why).
"""

from __future__ import annotations

from datetime import datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from profilerhub_app import http
from profilerhub_core.errors import NotFound


async def jobs(request: Request) -> Response:
    """``{"items": [...], "next_token", "total", "status_counts", "listed_at"}``: one page."""
    owned, token, query = http.services(request).jobs, http.token(request), dict(request.query_params)

    def page() -> Response:
        listed = owned.page(token, query)
        return JSONResponse({**listed, "listed_at": datetime.now().astimezone().isoformat()})

    return await http.answer(page)


async def one_job(request: Request) -> Response:
    """One job as the list shows it (the dashboard of a job still running polls this)."""
    owned, token, job_id = http.services(request).jobs, http.token(request), request.path_params["job_id"]
    return await http.answer(lambda: owned.described(token, job_id))


async def job_summary(request: Request) -> Response:
    """The job's ``processed/summary.json`` as stored (404 until ingest made it Ready)."""
    owned, token, job_id = http.services(request).jobs, http.token(request), request.path_params["job_id"]

    def summary() -> Response:
        try:
            data = owned.summary_bytes(token, job_id)
        except NotFound:
            raise NotFound(f"Job '{job_id}' has no summary (not found, or not Ready yet)") from None
        return Response(content=data, media_type="application/json")

    return await http.answer(summary)


def routes(api_base: str) -> list[Route]:
    """The job routes under ``api_base`` (the app's ``/apps/{id}/api``)."""
    return [
        Route(f"{api_base}/jobs", jobs, methods=["GET"]),
        Route(f"{api_base}/jobs/{{job_id}}", one_job, methods=["GET"]),
        Route(f"{api_base}/jobs/{{job_id}}/summary", job_summary, methods=["GET"]),
    ]
