"""The app's HTTP edge, shared by every route module: parameters in, answers out, one error table.

A route module parses its request with these helpers, hands the caller's token (never the
request) to the layer below (``owned``, ``jobdata``, ``live``, through :func:`services`), and
returns through :func:`answer`, which runs the work in a thread and maps what it raises with
:func:`error_for`. Route modules import this module and the layers below, never each other.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from profilerhub_core.errors import InvalidInput, ProfilerHubError, http_answer

if TYPE_CHECKING:
    from profilerhub_app.owned import OwnedJob
    from profilerhub_app.services import AppServices


MAX_TRACES = 100_000
"""The highest trace index a request may name (``?trace=``)."""


class BadParameter(InvalidInput):
    """A query parameter that is missing or out of range (answered 400)."""


def error(status: int, code: str, message: str) -> JSONResponse:
    """The project's error shape ``{"error": {"code", "message"}}``."""
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def error_for(exc: ProfilerHubError) -> JSONResponse:
    """The answer to a domain error raised below a route: the hub's answer to it, from the one
    table both use (``profilerhub_core.errors.HTTP_STATUS``, ``http_answer``)."""
    status, body, headers = http_answer(exc)
    return JSONResponse(body, status_code=status, headers=headers or None)


async def answer(work: Callable[[], Any]) -> Response:
    """Run ``work`` in a thread; a dict becomes JSON, a ``Response`` goes as it is, a domain error
    becomes its answer (:func:`error_for`)."""
    try:
        result = await run_in_threadpool(work)
    except ProfilerHubError as exc:
        return error_for(exc)
    return result if isinstance(result, Response) else JSONResponse(result)


def services(request: Request) -> AppServices:
    """The app's parts, built by ``create_app``."""
    built: AppServices = request.app.state.services
    return built


def token(request: Request) -> str:
    """The caller's hub-signed token (checked already by ``auth.RequireAppToken``)."""
    return request.headers.get("authorization", "").partition(" ")[2].strip()


def owned_job(request: Request, job_id: str) -> OwnedJob:
    """The caller's job ``job_id``, any status (``NotFound`` when the hub lists no such job)."""
    return services(request).jobs.job(token(request), job_id)


def ready_job(request: Request, job_id: str) -> OwnedJob:
    """The caller's Ready job ``job_id`` (``NotFound`` otherwise)."""
    return services(request).jobs.ready_job(token(request), job_id)


def trace_job(request: Request, job_id: str) -> OwnedJob:
    """The caller's job ``job_id`` whose traces can be read: Ready, or still running (its captures
    ingested so far: ``jobdata.live_captures``)."""
    return services(request).jobs.ready_job(token(request), job_id, running=True)


def int_param(request: Request, name: str, default: int | None, lo: int, hi: int) -> int:
    """The integer query parameter ``name`` in ``[lo, hi]``; ``default`` when absent (``None``: required)."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        if default is None:
            raise BadParameter(f"'{name}' is required")
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadParameter(f"'{name}' must be an integer, not {raw[:40]!r}") from None
    if not lo <= value <= hi:
        raise BadParameter(f"'{name}' must be between {lo} and {hi}")
    return value


def float_param(request: Request, name: str) -> float | None:
    """The finite number query parameter ``name``; ``None`` when absent."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BadParameter(f"'{name}' must be a number, not {raw[:40]!r}") from None
    if not math.isfinite(value):
        raise BadParameter(f"'{name}' must be a finite number")
    return value


def id_list(request: Request, name: str, limit: int = 4096) -> list[int] | None:
    """Comma-separated ids; None when the parameter is absent (all), [] when empty (none)."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    parts = [p for p in raw.split(",") if p.strip()]
    if len(parts) > limit:
        raise BadParameter(f"'{name}' lists more than {limit} ids")
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise BadParameter(f"'{name}' must be comma-separated integers") from None


__all__ = [
    "MAX_TRACES",
    "BadParameter",
    "answer",
    "error",
    "float_param",
    "error_for",
    "id_list",
    "int_param",
    "owned_job",
    "ready_job",
    "services",
    "token",
    "trace_job",
]
