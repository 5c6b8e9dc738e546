"""The ``/sagemaker`` endpoint: SageMaker's JSON 1.1 protocol over one ``POST``.

    POST /sagemaker/            X-Amz-Target: SageMaker.<Operation>
                                Content-Type: application/x-amz-json-1.1
                                Authorization: AWS4-HMAC-SHA256 Credential=<key id>/…, Signature=…

``SageMakerDoor`` serves it: an ASGI middleware inside the hub's own (security headers, body
limit, session closing: ``main.create_app``) that answers ``/sagemaker`` and ``/sagemaker/``
itself and passes every other path on to FastAPI. One path, one method and an answer that is
always SageMaker's JSON need nothing of FastAPI's routing, dependency solving and response
models, which were a third of a ``describe_app``'s CPU; the operations are the same service
functions either way.

A request is answered in four steps, each refusing in SageMaker's error shape
(``{"__type", "message"}``, see ``errors``):

1. the operation: one of SageMaker's model (``UnknownOperationException``), supported here
   (``operations.OPERATIONS``), its body valid for the model's input shape (``ValidationException``);
2. the signature: the ``Authorization`` header parsed, ``X-Amz-Date`` within the clock-skew window,
   the key looked up (``UnrecognizedClientException``) and the signature recomputed with botocore's
   signer (``InvalidSignatureException``);
3. the caller: the key's user, built like a REST token's caller (same roles, same scopes);
4. the operation itself, in one database transaction, in the thread pool.
"""

from __future__ import annotations

import functools
import logging
from datetime import datetime
from typing import Any

import orjson
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from profilerhub_core.db.models import utcnow
from profilerhub_core.errors import ProfilerHubError
from profilerhub_core.records import access_keys
from profilerhub_core.settings import Settings
from profilerhub_hub.deps.auth import caller_of
from profilerhub_hub.deps.session import request_session, request_step, run_step
from profilerhub_hub.errors import error_response
from profilerhub_hub.permissions import Caller
from profilerhub_hub.sagemaker import model, sigv4
from profilerhub_hub.sagemaker.errors import AwsError, aws_error_of_exception
from profilerhub_hub.sagemaker.operations import OPERATIONS, Call

PREFIX = "/sagemaker"
PATHS = frozenset({PREFIX, PREFIX + "/"})
CONTENT_TYPE = "application/x-amz-json-1.1"
_TARGET_PREFIX = "SageMaker."
_CONTENT_TYPE_HEADER = (b"content-type", CONTENT_TYPE.encode())

log = logging.getLogger(__name__)


async def _send(send: Send, body: dict[str, Any], status: int = 200, error_type: str | None = None) -> None:
    payload = orjson.dumps(body)
    headers = [_CONTENT_TYPE_HEADER, (b"content-length", str(len(payload)).encode())]
    if error_type is not None:
        headers.append((b"x-amzn-errortype", error_type.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _operation_name(request: Request) -> str:
    target = request.headers.get("x-amz-target", "")
    if not target.startswith(_TARGET_PREFIX):
        raise AwsError("UnknownOperationException", "X-Amz-Target must be SageMaker.<Operation>")
    name = target[len(_TARGET_PREFIX) :]
    model.operation(name)  # one of SageMaker's operations at all
    if name not in OPERATIONS:
        raise AwsError("UnknownOperationException", f"SageMaker.{name} is not supported by ProfilerHub")
    return name


def _parse(name: str, body: bytes) -> dict[str, Any]:
    """The request's params: a dict of its own (the caller may change it), validated."""
    if _reads_only(name) and len(body) <= _CACHED_BODY_BYTES:
        _validated_read(name, body)
        return orjson.loads(body or b"{}")
    return _parsed(name, body)


# A poller sends the same body again and again (describe_app until InService): a read's body is
# validated against the model once. Only the verdict is kept, never the params: parsing again
# costs a microsecond and gives every request a dict no other request shares.
_CACHED_BODY_BYTES = 4096


@functools.lru_cache(maxsize=1024)
def _validated_read(name: str, body: bytes) -> None:
    _parsed(name, body)


def _parsed(name: str, body: bytes) -> dict[str, Any]:
    try:
        params = orjson.loads(body or b"{}")
    except orjson.JSONDecodeError:
        raise AwsError("SerializationException", "The request body is not valid JSON") from None
    return model.validate_input(model.operation(name), params)


def _authenticated(
    request: Request, session: Session, signed: sigv4.Signed, body: bytes, read_only: bool
) -> Caller:
    """The caller behind a valid signature. The key's owner is looked up at most once per
    ``token_cache_seconds`` (the REST API's token cache, keyed by the derived secret); the
    signature is checked on every request."""
    settings: Settings = request.app.state.settings
    cache = request.app.state.token_cache
    if not access_keys.ACCESS_KEY_ID.fullmatch(signed.access_key_id):
        raise AwsError(
            "UnrecognizedClientException", "The security token included in the request is invalid."
        )
    secret = access_keys.access_secret(settings.signing_key(), signed.access_key_id)

    def load() -> tuple[Caller, datetime | None]:
        try:
            owner, _ = access_keys.authenticate_access_key(
                session,
                settings.signing_key(),
                signed.access_key_id,
                touch_seconds=settings.token_touch_seconds,
                read_only=read_only,
            )
        except ProfilerHubError as refused:
            raise AwsError("UnrecognizedClientException", refused.message) from None
        return caller_of(owner), owner.expires_at

    caller: Caller = cache.lookup(secret, load)
    scope, host = request.scope, request.headers.get("host", "")
    query = scope["query_string"].decode("latin-1")  # as Starlette's request.url reads the scope
    url = f"{scope['scheme']}://{host}{scope['path']}" + (f"?{query}" if query else "")
    sigv4.check_signature(signed, secret, request.method, url, request.headers.items(), body)
    return caller


def _reads_only(name: str) -> bool:
    """Operations that change nothing (they may run inline where reads are local, like REST reads).
    ``CreatePresignedDomainUrl`` is not one: an opening by impersonation writes an audit row."""
    return name.startswith(("Describe", "List"))


async def answer(request: Request) -> tuple[dict[str, Any], int, str | None]:
    """Every SageMaker operation ProfilerHub supports (see ``docs/sagemaker-api.md``): the answer's
    body, status and ``x-amzn-ErrorType``."""
    settings: Settings = request.app.state.settings
    try:
        name = _operation_name(request)
        body = await request.body()
        signed = sigv4.parse_authorization(
            request.headers.get("authorization"), request.headers.get("x-amz-date")
        )
        sigv4.check_clock(signed, utcnow(), settings.sagemaker_clock_skew_seconds)

        def step(session: Session, read_only: bool) -> dict[str, Any]:
            caller = _authenticated(request, session, signed, body, read_only)
            params = _parse(name, body)
            return OPERATIONS[name](Call(request, session, caller, settings, params))

        if _reads_only(name):
            return await run_step(request, step), 200, None

        def in_thread() -> dict[str, Any]:
            session = request_session(request)
            with request_step(session):
                return step(session, False)

        return await run_in_threadpool(in_thread), 200, None
    except Exception as exc:
        error = aws_error_of_exception(exc)
        if error is None:
            log.exception("unhandled error in SageMaker.%s", request.headers.get("x-amz-target", "?"))
            error = AwsError("InternalFailure", "Internal error; the hub log has details", 500)
        return error.body(), error.status, error.code


class SageMakerDoor:
    """ASGI middleware answering ``POST /sagemaker[/]`` (see the module's docstring); any other
    method there is 405, any other path goes on to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in PATHS:
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":
            response = error_response(
                405, "MethodNotAllowed", "This method is not allowed on this route", {"Allow": "POST"}
            )
            await response(scope, receive, send)
            return
        body, status, error_type = await answer(Request(scope, receive))
        await _send(send, body, status, error_type)


__all__ = ["CONTENT_TYPE", "PATHS", "PREFIX", "SageMakerDoor", "answer"]
