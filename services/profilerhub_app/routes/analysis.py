"""The dashboard, ranks, compare and raw-download routes (shapes in ``docs/app-api.md``).

Thin: each parses its parameters, reads what ingest stored through ``JobData`` and hands it to
the analysis engine's assembly (``dashboard``, ``rank_table``, ``compare``); nothing here computes
a figure of its own.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from profilerhub_analysis.compare import compare, merge_op_totals, profile
from profilerhub_analysis.dashboard import DEFAULT_TOP, MAX_TOP, dashboard
from profilerhub_analysis.ranks import rank_table
from profilerhub_app.http import MAX_TRACES, BadParameter, answer, int_param, owned_job, ready_job, services
from profilerhub_app.jobdata import trace_list
from profilerhub_app.owned import OwnedJob


def _dashboard(request: Request, job_id: str) -> dict[str, Any]:
    top = int_param(request, "top", DEFAULT_TOP, 1, MAX_TOP)
    index = int_param(request, "trace", 0, 0, MAX_TRACES)
    jd = services(request).data
    job = ready_job(request, job_id)
    summary = jd.summary(job)
    traces = trace_list(summary)
    if summary.get("traces"):
        entry = jd.trace(job, index)
        panels = dashboard(entry["report"], jd.panels(job, index), summary, top)
        trace = traces[index]
    else:  # a job of SDK files alone: the job-level panels only
        panels = dashboard({}, {}, summary, top)
        trace = None
    return {
        "job_id": job_id,
        "name": summary.get("job", {}).get("name"),
        "partial": bool(summary.get("partial")),
        "trace": trace,
        "traces": traces,
        "job": summary.get("job", {}),
        "panels": panels,
    }


async def job_dashboard(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]
    return await answer(lambda: _dashboard(request, job_id))


def _ranks(request: Request, job_id: str) -> dict[str, Any] | Response:
    job = ready_job(request, job_id)
    data = services(request).data
    stored = data.ranks(job)  # written at the join, served as stored; a job before it: computed here
    if stored is not None:
        return Response(content=stored, media_type="application/json")
    table = rank_table([t["report"] for t in data.summary(job).get("traces", [])])
    return table | {"overview": None}


async def job_ranks(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]
    return await answer(lambda: _ranks(request, job_id))


def _profile(request: Request, job: OwnedJob, index: int | None) -> dict[str, Any]:
    jd = services(request).data
    traces = jd.summary(job).get("traces", [])
    chosen = range(len(traces)) if index is None else [index]
    reports, ops = [], []
    for i in chosen:
        reports.append(jd.trace(job, i)["report"])
        ops.append(jd.panels(job, i).get("op_totals", {"name": [], "count": [], "total_us": []}))
    if not reports:
        raise BadParameter(f"job '{job.job_id}' has no trace to compare")
    return profile(reports, ops[0] if len(ops) == 1 else merge_op_totals(ops))


def _compare(request: Request) -> dict[str, Any]:
    base_id, test_id = request.query_params.get("base"), request.query_params.get("test")
    if not base_id or not test_id:
        raise BadParameter("give both 'base' and 'test' job ids")
    sides = []
    for job_id, param in ((base_id, "base_trace"), (test_id, "test_trace")):
        index = int_param(request, param, -1, -1, MAX_TRACES)
        job = ready_job(request, job_id)
        sides.append(_profile(request, job, None if index < 0 else index))
    result = compare(sides[0], sides[1])
    result["compare"]["base"]["job_id"], result["compare"]["test"]["job_id"] = base_id, test_id
    return result


async def compare_jobs(request: Request) -> Response:
    return await answer(lambda: _compare(request))


def _gzip_chunks(chunks: Iterator[bytes]) -> Iterator[bytes]:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    for chunk in chunks:
        out = packer.compress(chunk)
        if out:
            yield out
    yield packer.flush()


def _raw(request: Request, job_id: str) -> Response:
    index = int(request.path_params["index"])
    jd = services(request).data
    job = ready_job(request, job_id)
    rel = str(jd.trace(job, index).get("file") or "")
    key = job.key(f"raw/{rel}")
    job.store.head(key)  # NotFound (404) before the response starts
    chunks = job.store.stream(key)
    gzipped = rel.endswith(".gz")
    name = rel.rsplit("/", 1)[-1] + ("" if gzipped else ".gz")
    return StreamingResponse(
        chunks if gzipped else _gzip_chunks(chunks),
        media_type="application/gzip",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


async def raw_trace(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]
    return await answer(lambda: _raw(request, job_id))


def _live(request: Request, job_id: str) -> dict[str, Any]:
    return services(request).live.view(owned_job(request, job_id))


async def job_live(request: Request) -> Response:
    """What the job has streamed so far (any status; meant for jobs still running)."""
    job_id: str = request.path_params["job_id"]
    return await answer(lambda: _live(request, job_id))


def routes(api_base: str) -> list[Route]:
    return [
        Route(f"{api_base}/jobs/{{job_id}}/live", job_live, methods=["GET"]),
        Route(f"{api_base}/jobs/{{job_id}}/dashboard", job_dashboard, methods=["GET"]),
        Route(f"{api_base}/jobs/{{job_id}}/ranks", job_ranks, methods=["GET"]),
        Route(f"{api_base}/jobs/{{job_id}}/traces/{{index:int}}/raw", raw_trace, methods=["GET"]),
        Route(f"{api_base}/compare", compare_jobs, methods=["GET"]),
    ]
