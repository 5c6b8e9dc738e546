"""The timeline routes: lanes, binary windows, one event, search, a range's aggregate
(``docs/app-api.md``).

Each answers from the trace's timeline written at ingest and opened by ``JobData.timeline``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from profilerhub_analysis.timeline.bundle import MAX_SEARCH
from profilerhub_analysis.timeline.index import MAX_WIDTH_PX
from profilerhub_app.http import MAX_TRACES, BadParameter, answer, id_list, int_param, services, trace_job
from profilerhub_app.jobdata import JobTimeline
from profilerhub_core.errors import NotFound

WINDOW_TYPE = "application/x-profilerhub-window"
MAX_QUERY = 200
_NS = 1 << 62


def _timeline(request: Request) -> JobTimeline:
    job = trace_job(request, request.path_params["job_id"])
    return services(request).data.timeline(job, int_param(request, "trace", 0, 0, MAX_TRACES))


def _lanes(request: Request) -> dict[str, Any]:
    tl = _timeline(request)
    jd = services(request).data
    job = trace_job(request, request.path_params["job_id"])
    index = int_param(request, "trace", 0, 0, MAX_TRACES)
    entry = jd.trace(job, index)
    trace = {"index": index, "file": entry.get("file"), "rank": entry.get("report", {}).get("rank")}
    return tl.lanes | {"trace": trace}


def _window(request: Request) -> Response:
    headers = {"Cache-Control": "private, max-age=300"}
    if request.query_params.get("overview") not in (None, "", "0"):
        return Response(content=_timeline(request).overview(), media_type=WINDOW_TYPE, headers=headers)
    start = int_param(request, "start", None, -_NS, _NS)
    end = int_param(request, "end", None, -_NS, _NS)
    px = int_param(request, "px", None, 1, MAX_WIDTH_PX)
    if end <= start:
        raise BadParameter("'end' must be after 'start'")
    raw_min_px = request.query_params.get("min_px", "1")
    try:
        min_px = float(raw_min_px)
    except ValueError:
        raise BadParameter("'min_px' must be a number") from None
    if not 1.0 <= min_px <= 1000.0:
        raise BadParameter("'min_px' must be between 1 and 1000")
    tl = _timeline(request)
    body = tl.window_bytes(start, end, px, id_list(request, "lanes"), id_list(request, "counters"), min_px)
    return Response(content=body, media_type=WINDOW_TYPE, headers=headers)


def _event(request: Request) -> dict[str, Any]:
    event_id = int(request.path_params["event_id"])
    found = _timeline(request).event(event_id)
    if found is None:
        raise NotFound(f"no event {event_id} in this trace")
    return found


def _search(request: Request) -> dict[str, Any]:
    q = request.query_params.get("q", "")
    if not q.strip():
        raise BadParameter("'q' (the text to find in event names) is required")
    if len(q) > MAX_QUERY:
        raise BadParameter(f"'q' is longer than {MAX_QUERY} characters")
    limit = int_param(request, "limit", 100, 1, MAX_SEARCH)
    after = int_param(request, "after", -_NS, -_NS, _NS)
    return _timeline(request).search(q, limit, None if after == -_NS else after)


def _aggregate(request: Request) -> dict[str, Any]:
    start = int_param(request, "start", None, -_NS, _NS)
    end = int_param(request, "end", None, -_NS, _NS)
    if end <= start:
        raise BadParameter("'end' must be after 'start'")
    limit = int_param(request, "limit", 15, 1, MAX_SEARCH)
    return _timeline(request).aggregate(start, end, id_list(request, "lanes"), limit)


async def lanes(request: Request) -> Response:
    return await answer(lambda: _lanes(request))


async def window(request: Request) -> Response:
    return await answer(lambda: _window(request))


async def event(request: Request) -> Response:
    return await answer(lambda: _event(request))


async def search(request: Request) -> Response:
    return await answer(lambda: _search(request))


async def aggregate(request: Request) -> Response:
    return await answer(lambda: _aggregate(request))


def routes(api_base: str) -> list[Route]:
    base = f"{api_base}/jobs/{{job_id}}/timeline"
    return [
        Route(f"{base}/lanes", lanes, methods=["GET"]),
        Route(f"{base}/window", window, methods=["GET"]),
        Route(f"{base}/event/{{event_id:int}}", event, methods=["GET"]),
        Route(f"{base}/search", search, methods=["GET"]),
        Route(f"{base}/aggregate", aggregate, methods=["GET"]),
    ]
