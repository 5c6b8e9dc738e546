"""The OpenAPI document: what FastAPI derives from the routes, plus every status a route answers.

FastAPI documents a route's success status and a 422 (in its own validation shape, not ours). The
hub answers more, from places a route does not see: authentication (401, 429 after repeated
failed token checks), authorization and lookup (403, 404), the error handlers (400 malformed
JSON or a bad ``next_token``, 409 conflicts, 413 body limit, 415 a body that is not JSON, 503 the
database). :func:`install_openapi` adds them to each operation by what it has, in the one error
shape ``{"error": {"code", "message"}}``, so generated clients and schemathesis see the truth:

    every operation but the probes   401 403 429 503
    with a path parameter            404
    with any parameter or a body     400 422
    any method but GET               409
    with a JSON body                 413 415

A route adds its own with FastAPI's ``responses={409: {"description": ...}}`` (the job report
answers 409 until the job is Ready). Query parameters lose the ``anyOf [T, null]`` FastAPI writes
for an optional value (a query string has no null), and ``limit`` gets the configured maximum and
default.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from profilerhub_core.settings import Settings
from profilerhub_hub.errors import HTTP_CODES

ERROR_SCHEMA = {
    "title": "Error",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        }
    },
}
WHEN = {
    400: "Malformed JSON, a tampered or foreign next_token, a value the hub refuses",
    401: "Missing, unknown, revoked or expired token",
    403: "The caller may see the target but not do this",
    404: "No such resource, or hidden from this caller",
    409: "Conflicts with the resource's state (in use, duplicate name, not ready)",
    413: "The request body is over the hub's limit",
    415: "A body that is not sent as application/json",
    422: "A field of the wrong type or form",
    429: "Too many requests (failed token checks, a quota); see Retry-After",
    503: "The database or another dependency is unavailable; retry",
}
#: Operations that answer without a token (their own statuses are declared on the route).
OPEN_PATHS = ("/healthz", "/readyz", "/owner/jobs")
METHODS = ("get", "put", "post", "delete", "patch")


def _error_response(status: int, description: str | None = None) -> dict[str, Any]:
    return {
        "description": description
        or f"{HTTP_CODES.get(status, 'Error')}: {WHEN.get(status, '')}".rstrip(": "),
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _statuses(path: str, method: str, operation: dict[str, Any]) -> set[int]:
    if path.endswith(OPEN_PATHS):
        return {503}
    params = operation.get("parameters") or []
    body = operation.get("requestBody")
    found = {401, 403, 429, 503}
    if any(p.get("in") == "path" for p in params):
        found.add(404)
    if params or body:
        found |= {400, 422}
    if method != "get":
        found.add(409)
    if body and "application/json" in (body.get("content") or {}):
        found |= {413, 415}
    return found


def _plain_query(parameter: dict[str, Any], settings: Settings) -> None:
    schema = parameter.get("schema") or {}
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [s for s in options if s.get("type") != "null"]
        if len(kept) == 1:
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            schema = {**kept[0], **rest}
            if schema.get("default", 0) is None:
                del schema["default"]
    if parameter.get("name") == "limit":
        schema.update(maximum=settings.max_page_size, default=settings.default_page_size)
    parameter["schema"] = schema


def document(app: FastAPI, settings: Settings) -> dict[str, Any]:
    """The hub's OpenAPI document (see the module docstring)."""
    spec = get_openapi(
        title=app.title, version=app.version, summary=app.summary, routes=app.routes, servers=app.servers
    )
    spec.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path, item in spec.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            for parameter in operation.get("parameters") or []:
                if parameter.get("in") == "query":
                    _plain_query(parameter, settings)
            responses = operation.setdefault("responses", {})
            for status in sorted(_statuses(path, method, operation)):
                responses.setdefault(str(status), _error_response(status))
            for status, declared in responses.items():
                if status == "422" or (status.startswith(("4", "5")) and "content" not in declared):
                    declared["content"] = _error_response(int(status))["content"]  # our shape, not FastAPI's
    schemas = spec["components"]["schemas"]
    if "HTTPValidationError" not in str(spec.get("paths")):
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
    return spec


def install_openapi(app: FastAPI, settings: Settings) -> None:
    """Serve :func:`document` at the app's ``openapi_url`` (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = document(app, settings)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


__all__ = ["ERROR_SCHEMA", "document", "install_openapi"]
