"""SageMaker-style errors: ``{"__type": code, "message": ...}`` with the status boto3 expects.

    AwsError(code, message, status)      raised inside the endpoint, answered as is
    aws_error_of(ProfilerHubError)       the one mapping of the hub's domain errors:

        InvalidInput   -> ValidationException          400
        Unauthorized   -> UnrecognizedClientException  400   (unknown, revoked, expired key)
        AccessDenied   -> AccessDeniedException        400
        NotFound       -> ResourceNotFound             400   (SageMaker's modeled error)
        Conflict       -> ResourceInUse                400
        LimitExceeded  -> ResourceLimitExceeded        400
        PayloadTooLarge-> ValidationException          413
        Unavailable    -> ServiceUnavailable           503   (botocore retries it)

    aws_error_of_exception(exc)          the same for anything a request may raise, and what
                                         the hub's own handlers map for REST (``hub.errors``):

        a body past the hub's limit      -> ValidationException   413
        the client gone mid-body         -> SerializationException 400
        IntegrityError                   -> ResourceInUse          400
        DataError                        -> ValidationException    400
        any other DBAPIError             -> ServiceUnavailable     503
        anything else                    -> None: a bug (the endpoint logs it, answers 500)

botocore reads the code from ``__type`` (after any ``#``) and the text from ``message``, and
raises ``ClientError`` (or the client's modeled exception class, ``sm.exceptions.ResourceNotFound``).
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError
from starlette.requests import ClientDisconnect

from profilerhub_core.errors import (
    AccessDenied,
    Conflict,
    InvalidInput,
    LimitExceeded,
    NotFound,
    PayloadTooLarge,
    ProfilerHubError,
    Unauthorized,
    Unavailable,
)
from profilerhub_hub.errors import BodyTooLarge, database_error


class AwsError(Exception):
    """An error answered in SageMaker's shape."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status

    def body(self) -> dict[str, str]:
        return {"__type": self.code, "message": self.message}


_MAPPING: list[tuple[type[ProfilerHubError], str, int]] = [
    (InvalidInput, "ValidationException", 400),
    (Unauthorized, "UnrecognizedClientException", 400),
    (AccessDenied, "AccessDeniedException", 400),
    (NotFound, "ResourceNotFound", 400),
    (Conflict, "ResourceInUse", 400),
    (LimitExceeded, "ResourceLimitExceeded", 400),
    (PayloadTooLarge, "ValidationException", 413),
    (Unavailable, "ServiceUnavailable", 503),
]


def aws_error_of(error: ProfilerHubError) -> AwsError:
    for kind, code, status in _MAPPING:
        if isinstance(error, kind):
            return AwsError(code, error.message, status)
    return AwsError("InternalFailure", error.message, 500)


def aws_error_of_exception(exc: Exception) -> AwsError | None:
    if isinstance(exc, AwsError):
        return exc
    if isinstance(exc, ProfilerHubError):
        return aws_error_of(exc)
    if isinstance(exc, BodyTooLarge):
        return AwsError("ValidationException", str(exc.detail), 413)
    if isinstance(exc, ClientDisconnect):
        return AwsError("SerializationException", "The request body did not arrive whole")
    if isinstance(exc, DBAPIError):  # what it means, as the REST API says it, in SageMaker's shape
        return aws_error_of(database_error(exc))
    return None


def validation(message: str) -> AwsError:
    return AwsError("ValidationException", message)


__all__ = ["AwsError", "aws_error_of", "aws_error_of_exception", "validation"]
