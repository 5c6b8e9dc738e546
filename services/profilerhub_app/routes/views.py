"""The TensorBoard plugin's views of one trace (overview, GPU summary, operators, kernels, memory).

Ingest computed them once (``profilerhub_analysis.tbviews``, stored as the trace's
``tb_views.json``); this route hands them over as stored, with the job's trace list for the
picker and the plugin's recommendations for that trace (``rules.tb_recommendations.recommend``,
at the default thresholds). ``views/operators?t0us=&t1us=`` is the Operators view over the calls
that start in a time range (a timeline selection), from the trace's ``tb_calls.npz``. Shapes:
``docs/app-api.md``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from profilerhub_analysis.rules.tb_recommendations import recommend
from profilerhub_app.http import MAX_TRACES, BadParameter, answer, float_param, int_param, services, trace_job
from profilerhub_app.jobdata import trace_list


def _views(request: Request, job_id: str) -> dict[str, Any]:
    index = int_param(request, "trace", 0, 0, MAX_TRACES)
    jd = services(request).data
    job = trace_job(request, job_id)
    summary = jd.summary(job)
    return {
        "job_id": job_id,
        "name": summary.get("job", {}).get("name"),
        "trace": index,
        "traces": trace_list(summary),
        "views": jd.tb_views(job, index),
        "recommendations": recommend(jd.trace(job, index).get("tb_brief") or {}),
        "ranks": [
            {**t, **((entry.get("tb_brief") or {}).get("distributed") or {})}
            for t, entry in zip(trace_list(summary), summary.get("traces", []), strict=True)
        ],
    }


def _operators(request: Request, job_id: str) -> dict[str, Any]:
    index = int_param(request, "trace", 0, 0, MAX_TRACES)
    t0, t1 = float_param(request, "t0us"), float_param(request, "t1us")
    if t0 is not None and t1 is not None and t1 <= t0:
        raise BadParameter("'t1us' must be after 't0us'")
    rows = services(request).data.tb_operators_between(trace_job(request, job_id), index, t0, t1)
    return {"job_id": job_id, "trace": index, **rows}


async def job_views(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]
    return await answer(lambda: _views(request, job_id))


async def job_operators(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]
    return await answer(lambda: _operators(request, job_id))


def routes(api_base: str) -> list[Route]:
    return [
        Route(f"{api_base}/jobs/{{job_id}}/views", job_views, methods=["GET"]),
        Route(f"{api_base}/jobs/{{job_id}}/views/operators", job_operators, methods=["GET"]),
    ]
