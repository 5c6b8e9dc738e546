"""The owner's rule results and profiling report, read from the job's processed files.

``api/jobs/{id}/rules``: ``processed/rules.json`` as ingest (or live evaluation) wrote it; a job
not evaluated yet answers ``{"status": "InProgress", "final": false, "rules": []}``.
``api/jobs/{id}/report``: the same HTML report as the hub's ``…/jobs/{id}/report``.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from profilerhub_analysis.html_report import render_report
from profilerhub_analysis.series import JobSeries, unpack
from profilerhub_analysis.tensors import TensorTable
from profilerhub_app.http import answer, owned_job, ready_job, services
from profilerhub_core.errors import NotFound
from profilerhub_core.storage import layout
from profilerhub_core.storage.layout import RULES, SERIES

REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _rules(request: Request, job_id: str) -> dict[str, Any]:
    job = owned_job(request, job_id)
    try:
        stored: dict[str, Any] = json.loads(job.store.get(job.processed(RULES)))
    except NotFound:
        return {"job_id": job_id, "status": "InProgress", "final": False, "evaluated_at": None, "rules": []}
    return {"job_id": job_id, **stored}


async def job_rules(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]
    return await answer(lambda: _rules(request, job_id))


def _report(request: Request, job_id: str) -> Response:
    jd = services(request).data
    job = ready_job(request, job_id)
    try:
        series = unpack(job.store.get(job.processed(SERIES)))
    except NotFound:
        series = JobSeries()
    try:
        rules = json.loads(job.store.get(job.processed(RULES)))
    except NotFound:
        rules = None
    try:
        tensors = TensorTable.unpack(job.store.get(job.processed(layout.TENSORS)))
    except NotFound:  # the run watched no model
        tensors = None
    html = render_report(jd.summary(job), rules, series, tensors)
    headers = {"Content-Security-Policy": REPORT_CSP}
    if request.query_params.get("download"):
        headers["Content-Disposition"] = f'attachment; filename="profiling-report-{job_id}.html"'
    return HTMLResponse(html, headers=headers)


async def job_report(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]
    return await answer(lambda: _report(request, job_id))


def routes(api_base: str) -> list[Route]:
    return [
        Route(f"{api_base}/jobs/{{job_id}}/rules", job_rules, methods=["GET"]),
        Route(f"{api_base}/jobs/{{job_id}}/report", job_report, methods=["GET"]),
    ]


__all__ = ["routes"]
