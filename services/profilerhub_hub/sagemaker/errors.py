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

botocore reads the code from ``__type`` (after any ``#``) and the text from ``message``, and
raises ``ClientError`` (or the client's modeled exception class, ``sm.exceptions.ResourceNotFound``).
"""

from __future__ import annotations

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


def validation(message: str) -> AwsError:
    return AwsError("ValidationException", message)


__all__ = ["AwsError", "aws_error_of", "validation"]
