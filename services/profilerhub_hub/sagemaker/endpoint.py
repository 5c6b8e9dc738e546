"""The AWS doors: ``/sagemaker``, ``/cloudwatch`` and ``/logs``, each AWS's JSON protocol over one ``POST``.

    POST /sagemaker/            X-Amz-Target: SageMaker.<Operation>
                                Content-Type: application/x-amz-json-1.1
                                Authorization: AWS4-HMAC-SHA256 Credential=<key id>/…, Signature=…
    POST /cloudwatch/           X-Amz-Target: GraniteServiceVersion20100801.<Operation>  (JSON 1.0,
                                what botocore sends CloudWatch since its model lists ``json``;
                                signed for ``monitoring``)
    POST /logs/                 X-Amz-Target: Logs_20140328.<Operation>                  (JSON 1.1;
                                CloudWatch Logs, signed for ``logs``)

``SageMakerDoor`` serves them (``SERVICES``: one ``Service`` per door): an ASGI middleware inside
the hub's own (security headers, body limit, session closing: ``main.create_app``) that answers
those paths itself and passes every other path on to FastAPI. One path, one method and an answer that is
always SageMaker's JSON need nothing of FastAPI's routing, dependency solving and response
models, which were a third of a ``describe_app``'s CPU; the operations are the same service
functions either way.

A request is answered in four steps, each refusing in AWS's JSON error shape
(``{"__type", "message"}``, see ``errors``; a door may rename codes, ``Service.codes``):

1. the operation: one of the service's model (``UnknownOperationException``), supported here
   (``Service.operations``), its body valid for the model's input shape (``ValidationException``);
2. the signature: the ``Authorization`` header parsed, ``X-Amz-Date`` within the clock-skew window,
   the key looked up (``UnrecognizedClientException``) and the signature recomputed with botocore's
   signer (``InvalidSignatureException``);
3. the caller: the key's user, built like a REST token's caller (same roles, same scopes);
4. the operation itself, in one database transaction, in the thread pool.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from importlib import import_module
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
from profilerhub_hub.sagemaker import logs, model, sigv4
from profilerhub_hub.sagemaker.call import Call
from profilerhub_hub.sagemaker.errors import AwsError, aws_error_of_exception
from profilerhub_hub.sagemaker.operations import OPERATIONS
from profilerhub_hub.services import services
from profilerhub_hub.usecases import door_of

PREFIX = "/sagemaker"
PATHS = frozenset({PREFIX, PREFIX + "/"})
CONTENT_TYPE = "application/x-amz-json-1.1"

log = logging.getLogger(__name__)

Operation = Callable[[Call], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Service:
    """One AWS service a door speaks: where, botocore's model and signing names, the protocol's
    target prefix and content type, the operations supported, and the codes it renames."""

    prefix: str
    model: str
    signing_name: str
    target_prefix: str
    content_type: str
    operations: Mapping[str, Operation]
    codes: Mapping[str, str] = field(default_factory=dict)

    def reads_only(self, name: str) -> bool:
        """Operations that change nothing (they may run inline where reads are local, like REST
        reads). ``CreatePresignedDomainUrl`` is not one: an opening by impersonation is audited."""
        return name.startswith(("Describe", "List", "Get", "Filter"))


class ImportedOnFirstCall(Mapping[str, Operation]):
    """The operations table ``OPERATIONS`` of ``module``, imported on the first call to the door:
    the CloudWatch door reads series with numpy, which the hub's start does not wait for."""

    def __init__(self, module: str) -> None:
        self.module = module

    @functools.cached_property
    def _table(self) -> Mapping[str, Operation]:
        table: Mapping[str, Operation] = import_module(self.module).OPERATIONS
        return table

    def __getitem__(self, name: str) -> Operation:
        return self._table[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


SERVICES: dict[str, Service] = {
    service.prefix: service
    for service in (
        Service(PREFIX, "sagemaker", "sagemaker", "SageMaker.", CONTENT_TYPE, OPERATIONS),
        Service(
            "/cloudwatch",  # cloudwatch.PREFIX
            "cloudwatch",
            "monitoring",
            "GraniteServiceVersion20100801.",
            "application/x-amz-json-1.0",
            ImportedOnFirstCall("profilerhub_hub.sagemaker.cloudwatch"),
            {"ValidationException": "InvalidParameterValue", "ResourceNotFound": "ResourceNotFound"},
        ),
        Service(
            logs.PREFIX,
            "logs",
            "logs",
            "Logs_20140328.",
            CONTENT_TYPE,
            logs.OPERATIONS,
            {
                "ValidationException": "InvalidParameterException",
                "ResourceNotFound": "ResourceNotFoundException",
            },
        ),
    )
}
_PATHS = {path: service for prefix, service in SERVICES.items() for path in (prefix, prefix + "/")}


async def _send(
    send: Send, service: Service, body: dict[str, Any], status: int = 200, error_type: str | None = None
) -> None:
    payload = orjson.dumps(body)
    headers = [
        (b"content-type", service.content_type.encode()),
        (b"content-length", str(len(payload)).encode()),
    ]
    if error_type is not None:
        headers.append((b"x-amzn-errortype", error_type.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _operation_name(service: Service, request: Request) -> str:
    target = request.headers.get("x-amz-target", "")
    if not target.startswith(service.target_prefix):
        raise AwsError(
            "UnknownOperationException", f"X-Amz-Target must be {service.target_prefix}<Operation>"
        )
    name = target[len(service.target_prefix) :]
    model.operation(name, service.model)  # one of the service's operations at all
    if name not in service.operations:
        raise AwsError(
            "UnknownOperationException", f"{service.target_prefix}{name} is not supported by ProfilerHub"
        )
    return name


def _parse(name: str, body: bytes, service: Service | None = None) -> dict[str, Any]:
    """The request's params: a dict of its own (the caller may change it), validated."""
    service = service or SERVICES[PREFIX]
    if service.reads_only(name) and len(body) <= _CACHED_BODY_BYTES:
        _validated_read(service.model, name, body)
        return orjson.loads(body or b"{}")
    return _parsed(service.model, name, body)


# A poller sends the same body again and again (describe_app until InService): a read's body is
# validated against the model once. Only the verdict is kept, never the params: parsing again
# costs a microsecond and gives every request a dict no other request shares.
_CACHED_BODY_BYTES = 4096


@functools.lru_cache(maxsize=1024)
def _validated_read(service: str, name: str, body: bytes) -> None:
    _parsed(service, name, body)


def _parsed(service: str, name: str, body: bytes) -> dict[str, Any]:
    try:
        params = orjson.loads(body or b"{}")
    except orjson.JSONDecodeError:
        raise AwsError("SerializationException", "The request body is not valid JSON") from None
    return model.validate_input(model.operation(name, service), params)


def _authenticated(
    request: Request, session: Session, signed: sigv4.Signed, body: bytes, read_only: bool
) -> Caller:
    """The caller behind a valid signature. The key's owner is looked up at most once per
    ``token_cache_seconds`` (the REST API's token cache, keyed by the derived secret); the
    signature is checked on every request."""
    settings: Settings = services(request).settings
    cache = services(request).token_cache
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


async def answer(request: Request, service: Service | None = None) -> tuple[dict[str, Any], int, str | None]:
    """Every operation ProfilerHub supports of ``service`` (SageMaker's by default; see
    ``docs/sagemaker-api.md``): the answer's body, status and ``x-amzn-ErrorType``."""
    service = service or SERVICES[PREFIX]
    settings: Settings = services(request).settings
    try:
        name = _operation_name(service, request)
        body = await request.body()
        signed = sigv4.parse_authorization(
            request.headers.get("authorization"), request.headers.get("x-amz-date"), service.signing_name
        )
        sigv4.check_clock(signed, utcnow(), settings.sagemaker_clock_skew_seconds)

        def step(session: Session, read_only: bool) -> dict[str, Any]:
            caller = _authenticated(request, session, signed, body, read_only)
            params = _parse(name, body, service)
            door = door_of(services(request), session, service.model)
            return service.operations[name](Call(door, caller, params))

        if service.reads_only(name):
            return await run_step(request, step), 200, None

        def in_thread() -> dict[str, Any]:
            session = request_session(request)
            with request_step(session):
                return step(session, False)

        return await run_in_threadpool(in_thread), 200, None
    except Exception as exc:
        error = aws_error_of_exception(exc)
        if error is None:
            log.exception("unhandled error in %s", request.headers.get("x-amz-target", "?"))
            error = AwsError("InternalFailure", "Internal error; the hub log has details", 500)
        code = service.codes.get(error.code, error.code)
        return {"__type": code, "message": error.message}, error.status, code


class SageMakerDoor:
    """ASGI middleware answering ``POST`` on each door's path, with or without a final ``/`` (see
    the module's docstring); any other method there is 405, any other path goes on to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        service = _PATHS.get(scope["path"]) if scope["type"] == "http" else None
        if service is None:
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":
            response = error_response(
                405, "MethodNotAllowed", "This method is not allowed on this route", {"Allow": "POST"}
            )
            await response(scope, receive, send)
            return
        body, status, error_type = await answer(Request(scope, receive), service)
        await _send(send, service, body, status, error_type)


__all__ = ["CONTENT_TYPE", "PATHS", "PREFIX", "SERVICES", "SageMakerDoor", "Service", "answer"]
