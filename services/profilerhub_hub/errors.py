"""The one place errors become HTTP responses, all in the shape ``{"error": {"code", "message"}}``.

Domain exceptions (``profilerhub_core.errors``) carry no status; ``STATUS`` (the core's
``HTTP_STATUS``, the table the profiler app answers by too) maps them. Framework
errors are mapped too: request validation (422, malformed JSON 400), unknown routes (404), wrong
methods (405), oversized bodies (413, from ``BodyLimitMiddleware``), database conflicts (409),
values the database refuses (400) and an unreachable database (503). Anything else is a bug:
500 with a generic message, logged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from profilerhub_core import errors
from profilerhub_core.outage import is_outage

log = logging.getLogger("profilerhub.hub")

STATUS = errors.HTTP_STATUS
status_of = errors.http_status

HTTP_CODES = {
    400: "ValidationError",
    401: "Unauthorized",
    403: "AccessDenied",
    404: "ResourceNotFound",
    405: "MethodNotAllowed",
    409: "ResourceInUse",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
    422: "ValidationError",
    429: "ResourceLimitExceeded",
    503: "ServiceUnavailable",
}


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def error_response(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


async def _domain_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, errors.ProfilerHubError)
    status, body, headers = errors.http_answer(exc)
    if status >= 500 and not getattr(exc, "counted_outage", False):  # an outage logs its own two lines
        log.warning("%s: %s", exc.code, exc.message)
    return JSONResponse(body, status_code=status, headers=headers or None)


def _describe_validation(errs: list[Any]) -> str:
    parts = []
    for err in errs[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body",)) or "body"
        msg = err.get("msg", "invalid")
        if err.get("type") == "extra_forbidden":
            msg = "unknown field"
        parts.append(f"{loc}: {msg}")
    more = f" (and {len(errs) - 5} more)" if len(errs) > 5 else ""
    return "; ".join(parts) + more


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errs = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errs):
        detail = next(e for e in errs if e.get("type") == "json_invalid").get("ctx", {}).get("error", "")
        return error_response(400, "ValidationError", f"The request body is not valid JSON: {detail}")
    content_type = request.headers.get("content-type", "")
    body_errors = [e for e in errs if tuple(e.get("loc", ()))[:1] == ("body",)]
    if body_errors and "json" not in content_type.lower():
        # curl -d sends form encoding unless told otherwise; say so instead of a puzzling type error.
        return error_response(
            415,
            "UnsupportedMediaType",
            f"Send the request body as JSON with 'Content-Type: application/json' (got "
            f"{content_type or 'no Content-Type'!r})",
        )
    return error_response(422, "ValidationError", _describe_validation(errs))


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = HTTP_CODES.get(exc.status_code, "HttpError")
    message = str(exc.detail)
    if exc.status_code == 404 and message == "Not Found":
        message = "No such API route"
    elif exc.status_code == 405:
        message = "This method is not allowed on this route"
    return error_response(exc.status_code, code, message, exc.headers)


def database_error(exc: DBAPIError) -> errors.ProfilerHubError:
    """What a database error means to the caller (a unique constraint: a conflict; a value the
    column cannot hold: bad input; anything else: unavailable), for the REST API and SageMaker's
    door alike; logged here (an outage is logged once, when it starts and ends: the engine's events)."""
    if isinstance(exc, IntegrityError):
        log.info("integrity error mapped to a conflict: %s", exc)
        return errors.Conflict("The request conflicts with an existing resource; retry or rename")
    if isinstance(exc, DataError):
        log.info("data error mapped to bad input: %s", exc)
        return errors.InvalidInput("A value in the request cannot be stored or searched for")
    if not is_outage(exc):
        log.warning("database error mapped to unavailable: %s", exc)
    return errors.Unavailable("The database is unavailable or busy; retry shortly")


async def _database_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DBAPIError)
    error = database_error(exc)  # logged already: not through _domain_error
    return error_response(status_of(error), error.code, error.message)


async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error", exc_info=exc)
    return error_response(500, "InternalError", "Internal error; the hub log has details")


def install_error_handlers(app: FastAPI) -> None:
    handlers: dict[type[Exception], Callable[[Request, Exception], Any]] = {
        errors.ProfilerHubError: _domain_error,
        RequestValidationError: _validation_error,
        StarletteHTTPException: _http_error,
        DBAPIError: _database_error,  # IntegrityError and DataError too (database_error)
        Exception: _unexpected,
    }
    for cls, handler in handlers.items():
        app.add_exception_handler(cls, handler)


class BodyTooLarge(StarletteHTTPException):
    """Raised while reading a body past the limit (FastAPI re-raises HTTP exceptions untouched)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"The request body is larger than the limit of {limit} bytes")


class BodyLimitMiddleware:
    """Refuse request bodies over ``limit`` bytes with 413, before they are read into memory.

    ``overrides`` maps path prefixes to their own limit (``None`` = unlimited, for streaming
    uploads and the app proxy); the longest matching prefix wins. A key starting with ``^`` is a
    regular expression matched against the path (job file uploads: ``^/api/v1/.+/files/``).
    """

    def __init__(self, app: ASGIApp, limit: int, overrides: Mapping[str, int | None] | None = None) -> None:
        self.app = app
        self.limit = limit
        self.overrides = sorted((overrides or {}).items(), key=lambda kv: -len(kv[0]))

    def _limit_for(self, path: str) -> int | None:
        for prefix, limit in self.overrides:
            if path.startswith(prefix) or (prefix.startswith("^") and re.match(prefix, path)):
                return limit
        return self.limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit_for(scope["path"])
        if limit is None:
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                response = error_response(
                    413, "PayloadTooLarge", BodyTooLarge(limit).detail, {"Connection": "close"}
                )
                await response(scope, receive, send)
                return
        seen = 0

        async def receive_limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, receive_limited, send)


__all__ = [
    "STATUS",
    "BodyLimitMiddleware",
    "error_body",
    "error_response",
    "install_error_handlers",
    "status_of",
]
