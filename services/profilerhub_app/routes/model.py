"""The Model page's data: a job's ``ph.watch`` reductions, cut by the engine (``tensordata``).

    api/jobs/{id}/tensors                                  names, collections, modes, ranks, steps
    api/jobs/{id}/tensors/matrix?collection=&stat=&mode=&rank=   the per-layer heat map
    api/jobs/{id}/tensors/series?name=&stat=&mode=&rank=   one tensor's statistic by step
    api/jobs/{id}/tensors/hist?name=&mode=&rank=           its histogram per step

A running job answers from what it has streamed (``"final": false``). An unknown statistic or
mode is a 400, an unknown tensor a 404.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from profilerhub_app.http import BadParameter, answer, int_param, owned_job, services

MAX_RANK = 1 << 20


def _text(request: Request, name: str, default: str | None = None) -> str:
    value = request.query_params.get(name) or default
    if not value:
        raise BadParameter(f"'{name}' is required")
    if len(value) > 1000:
        raise BadParameter(f"'{name}' is longer than 1000 characters")
    return value


async def tensors_index(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]
    return await answer(lambda: services(request).tensors.index(owned_job(request, job_id)))


def _where(request: Request) -> tuple[str, int]:
    """``(mode, rank)`` of a view (train, rank 0 by default)."""
    return _text(request, "mode", "train"), int_param(request, "rank", 0, 0, MAX_RANK)


async def tensors_matrix(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]

    def work() -> object:
        collection, stat = _text(request, "collection", "gradients"), _text(request, "stat", "l2")
        return services(request).tensors.matrix(
            owned_job(request, job_id), collection, stat, *_where(request)
        )

    return await answer(work)


async def tensor_series(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]

    def work() -> object:
        name, stat = _text(request, "name"), _text(request, "stat", "l2")
        return services(request).tensors.series(owned_job(request, job_id), name, stat, *_where(request))

    return await answer(work)


async def tensor_hist(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]

    def work() -> object:
        return services(request).tensors.hist(
            owned_job(request, job_id), _text(request, "name"), *_where(request)
        )

    return await answer(work)


def routes(api_base: str) -> list[Route]:
    jobs = f"{api_base}/jobs/{{job_id}}/tensors"
    return [
        Route(jobs, tensors_index, methods=["GET"]),
        Route(f"{jobs}/matrix", tensors_matrix, methods=["GET"]),
        Route(f"{jobs}/series", tensor_series, methods=["GET"]),
        Route(f"{jobs}/hist", tensor_hist, methods=["GET"]),
    ]


__all__ = ["routes"]
