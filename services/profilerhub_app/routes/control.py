"""A running job's log and its dashboard's buttons: what the app asks the hub for its owner.

    GET  api/jobs/{job_id}/logs?rank=&offset=&limit=   a page of one rank's printed lines
    POST api/jobs/{job_id}/stop                        ask the run to stop (202)
    POST api/jobs/{job_id}/captures {"steps", ...}     ask for a PyTorch-profiler capture (202)

Thin: each is the hub's answer to the same request on ``/apps/{app_id}/owner/jobs/{job_id}/…``
(``profilerhub_app.hub.HttpHub.owner_job``), made with the token of the request served, so the
hub decides and audits as it does for REST; its refusals come back as the same errors (a run that
is over: 409 with the hub's reason). The log panel follows a running job by asking again from
the last answer's ``next_offset``.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from profilerhub_app.http import BadParameter, answer, int_param, services, token
from profilerhub_core.errors import NotFound
from profilerhub_core.storage import layout

#: The capture request's fields, as the hub's ``JobCaptureCreate`` takes them.
CAPTURE_FIELDS = ("steps", "start_step", "record_shapes")
MAX_BODY = 4096


def _ask(request: Request, what: str, method: str = "GET", **sent: Any) -> dict[str, Any]:
    job_id = request.path_params["job_id"]
    if not layout.is_id(job_id):  # the hub answers whose job it is (404 for anyone else's)
        raise NotFound(f"Job '{job_id[:80]}' not found")
    return services(request).jobs.hub.owner_job(token(request), job_id, what, method=method, **sent)


async def job_logs(request: Request) -> Response:
    """One page of a rank's lines: ``{"ranks", "rank", "stream", "lines", "total", "next_offset", …}``."""

    def page() -> dict[str, Any]:
        params = {"offset": str(int_param(request, "offset", 0, 0, 10**9))}
        params["limit"] = str(int_param(request, "limit", 1000, 1, 10_000))
        if request.query_params.get("rank", "") != "":
            params["rank"] = str(int_param(request, "rank", None, 0, 1_000_000))
        return _ask(request, "logs", params=params)

    return await answer(page)


async def stop_job(request: Request) -> Response:
    """The hub's job after the stop was asked (202)."""
    return await answer(lambda: JSONResponse(_ask(request, "stop", "POST"), status_code=202))


async def capture_job(request: Request) -> Response:
    """The capture the hub recorded (202): ``{"id", "steps", "start_step", "record_shapes", …}``."""
    raw = await request.body()

    def capture() -> Response:
        if len(raw) > MAX_BODY:
            raise BadParameter(f"the request body is over {MAX_BODY} bytes")
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            raise BadParameter('send a JSON object: {"steps": N}') from None
        if not isinstance(body, dict) or "steps" not in body:
            raise BadParameter('send a JSON object: {"steps": N}')
        unknown = sorted(set(body) - set(CAPTURE_FIELDS))
        if unknown:
            raise BadParameter(f"unknown fields: {', '.join(map(str, unknown))[:200]}")
        return JSONResponse(_ask(request, "captures", "POST", body=body), status_code=202)

    return await answer(capture)


def routes(api_base: str) -> list[Route]:
    """The routes under ``api_base`` (the app's ``/apps/{id}/api``)."""
    return [
        Route(f"{api_base}/jobs/{{job_id}}/logs", job_logs, methods=["GET"]),
        Route(f"{api_base}/jobs/{{job_id}}/stop", stop_job, methods=["POST"]),
        Route(f"{api_base}/jobs/{{job_id}}/captures", capture_job, methods=["POST"]),
    ]


__all__ = ["routes"]
