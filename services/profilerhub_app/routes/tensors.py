"""The owner's ``ph.watch`` tensors, as the hub's tensors API answers them (``docs/app-api.md``).

(``api/jobs/{id}/tensors``, the listing, and its ``matrix``/``series``/``hist`` are the Model
page's: ``routes/model.py``) ``api/jobs/{id}/tensors/{name}``
(``stat``, ``mode``, ``rank``, ``hist``, ``start``, ``end``), ``api/jobs/{id}/tensors/full`` and
``…/tensors/full/{path}``. A Ready job's table is ``processed/tensors.npz``; a running job's is
grown from its raw chunks so far (``AppServices.tensors``), so the Model page updates live.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from profilerhub_analysis import tensors_api
from profilerhub_analysis.tensor_chunks import FullTensor
from profilerhub_analysis.tensors import TensorTable
from profilerhub_app.http import BadParameter, answer, int_param, owned_job, services
from profilerhub_app.owned import OwnedJob
from profilerhub_core.errors import NotFound
from profilerhub_core.storage import layout

RAW = "raw/"


def _raw_names(job: OwnedJob) -> list[str]:
    base = job.key("raw") + "/"  # a key never ends in "/": validate_key refuses an empty segment
    return [o.key[len(base) :] for o in job.store.list(job.key(f"{RAW}{layout.RAW_TENSORS}") + "/")]


def _read_raw(job: OwnedJob, rel: str) -> bytes:
    return job.store.get(job.key(RAW + rel))


def _table(request: Request, job: OwnedJob) -> tuple[TensorTable, bool]:
    def processed() -> bytes | None:
        try:
            return job.store.get(job.processed(layout.TENSORS))
        except NotFound:
            return None

    return services(request).tensor_tables.table(
        job.job_id,
        ready=job.ready,
        processed=processed,
        raw_names=lambda: _raw_names(job),
        read_raw=lambda rel: _read_raw(job, rel),
    )


def _full(request: Request, job: OwnedJob) -> list[FullTensor]:
    return services(request).tensor_tables.full(
        job.job_id, lambda: _raw_names(job), lambda rel: _read_raw(job, rel)
    )


async def job_tensor(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]
    name: str = request.path_params["name"]
    q = request.query_params

    def work() -> dict[str, Any]:
        hist = q.get("hist", "false").lower()
        if hist not in ("true", "false", "1", "0"):
            raise BadParameter("'hist' must be true or false")
        start = int_param(request, "start", -1, -1, 2**62)
        end = int_param(request, "end", -1, -1, 2**62)
        query: dict[str, Any] = {
            "stat": q.get("stat", "l2"),
            "mode": q.get("mode", "train"),
            "rank": int_param(request, "rank", 0, 0, 1_000_000),
            "hist": hist in ("true", "1"),
            "start": None if start < 0 else start,
            "end": None if end < 0 else end,
        }
        table, _ = _table(request, owned_job(request, job_id))
        try:
            return tensors_api.series(table, name, job_id=job_id, **query)
        except tensors_api.TensorQueryError as exc:
            raise BadParameter(str(exc)) from exc
        except KeyError as exc:
            raise NotFound(str(exc.args[0])) from exc

    return await answer(work)


async def job_full_tensors(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]

    def work() -> dict[str, Any]:
        return {"job_id": job_id, "items": tensors_api.full_items(_full(request, owned_job(request, job_id)))}

    return await answer(work)


async def job_full_tensor(request: Request) -> Response:
    job_id: str = request.path_params["job_id"]
    path: str = request.path_params["path"]

    def work() -> Response:
        job = owned_job(request, job_id)
        if not any(f.path == path for f in _full(request, job)):
            raise NotFound(f"Job '{job_id}' has no full tensor at {path!r}")
        return Response(_read_raw(job, path), media_type="application/octet-stream")

    return await answer(work)


def routes(api_base: str) -> list[Route]:
    one = f"{api_base}/jobs/{{job_id}}/tensors"
    return [
        Route(f"{one}/full", job_full_tensors, methods=["GET"]),
        Route(f"{one}/full/{{path:path}}", job_full_tensor, methods=["GET"]),
        Route(f"{one}/{{name:path}}", job_tensor, methods=["GET"]),
    ]


__all__ = ["routes"]
