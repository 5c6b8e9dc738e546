"""The Model page's views beyond one tensor's series (``routes/tensors.py`` answers those):

    api/jobs/{id}/tensors                                  the index (``?format=npz``: the whole table)
    api/jobs/{id}/tensors/matrix?collection=&stat=&mode=&rank=   the heat map
    api/jobs/{id}/tensors/hist?name=&mode=&rank=           a tensor's histogram as shares per bin

over the same table as the tensors API (``AppServices.tensor_tables``: ``processed/tensors.npz``
when Ready, the streamed chunks while running), cut by ``profilerhub_analysis.tensor_views``. A
bad statistic or mode is a 400, an unknown tensor a 404. Mounted before ``routes/tensors.py``,
whose ``tensors/{name}`` would otherwise take these paths (a tensor's name always has a ``/``).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from profilerhub_analysis import tensor_views, tensors_api
from profilerhub_analysis.tensors import TensorTable
from profilerhub_app.http import BadParameter, answer, int_param, owned_job, services
from profilerhub_core.errors import NotFound
from profilerhub_core.storage import layout

MAX_RANK = 1 << 20


def _text(request: Request, name: str, default: str | None = None) -> str:
    value = request.query_params.get(name) or default
    if not value:
        raise BadParameter(f"'{name}' is required")
    if len(value) > 1000:
        raise BadParameter(f"'{name}' is longer than 1000 characters")
    return value


def _table(request: Request, job_id: str) -> tuple[TensorTable, bool]:
    job = owned_job(request, job_id)
    raw = job.key("raw") + "/"

    def processed() -> bytes | None:
        try:
            return job.store.get(job.key(f"processed/{layout.TENSORS}"))
        except NotFound:
            return None

    return services(request).tensor_tables.table(
        job.job_id,
        ready=job.ready,
        processed=processed,
        raw_names=lambda: [
            o.key[len(raw) :] for o in job.store.list(job.key(f"raw/{layout.RAW_TENSORS}") + "/")
        ],
        read_raw=lambda rel: job.store.get(job.key(f"raw/{rel}")),
    )


def _answer(request: Request, view: Any) -> Any:
    job_id: str = request.path_params["job_id"]
    mode, rank = _text(request, "mode", "train"), int_param(request, "rank", 0, 0, MAX_RANK)
    try:
        return view(_table(request, job_id)[0], mode, rank)
    except tensors_api.TensorQueryError as exc:
        raise BadParameter(str(exc)) from exc
    except KeyError as exc:
        raise NotFound(f"Job '{job_id}' has {exc.args[0]}") from exc


async def tensors_index(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]
    fmt = request.query_params.get("format", "json")

    def work() -> Any:
        if fmt not in ("json", "npz"):
            raise BadParameter("'format' must be json or npz")
        table, live = _table(request, job_id)
        if fmt == "npz":
            return Response(table.pack(), media_type="application/octet-stream")
        return tensors_api.index(table, job_id=job_id, live=live)

    return await answer(work)


async def tensors_matrix(request: Request) -> Response:
    collection, stat = request.query_params.get("collection") or "gradients", _text(request, "stat", "l2")
    return await answer(
        lambda: _answer(request, lambda t, mode, rank: tensor_views.matrix(t, collection, stat, mode, rank))
    )


async def tensor_hist(request: Request) -> Response:
    return await answer(
        lambda: _answer(
            request, lambda t, mode, rank: tensor_views.hist_shares(t, _text(request, "name"), mode, rank)
        )
    )


def routes(api_base: str) -> list[Route]:
    one = f"{api_base}/jobs/{{job_id}}/tensors"
    return [
        Route(one, tensors_index, methods=["GET"]),
        Route(f"{one}/matrix", tensors_matrix, methods=["GET"]),
        Route(f"{one}/hist", tensor_hist, methods=["GET"]),
    ]


__all__ = ["routes"]
