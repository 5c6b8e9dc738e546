"""Domain exceptions shared by every server-side package.

They carry no HTTP status; :data:`HTTP_STATUS` below is the one table that maps them, and
:func:`http_answer` the one answer made of them, used by the hub (``profilerhub_hub.errors``) and the
profiler app (``profilerhub_app.http``) alike, so both answer a domain error the same way
(``code`` is the public error code in ``{"error": {"code", "message"}}``).

    ProfilerHubError                               HTTP
    ├── InvalidInput          ValidationError      400  bad names, bad fields, unsafe storage keys
    ├── Unauthorized          Unauthorized         401  no, unknown, revoked or expired credentials
    ├── AccessDenied          AccessDenied         403  known caller, action not allowed
    ├── NotFound              ResourceNotFound     404  missing (or hidden, where existence would leak)
    ├── Conflict              ResourceInUse        409  state forbids it (has users, live apps, duplicate)
    ├── LimitExceeded         ResourceLimitExceeded  429  quota reached
    │   └── Throttled         ThrottlingException    429  too many attempts; ``retry_after`` seconds
    ├── PayloadTooLarge       PayloadTooLarge      413  upload over a configured limit
    │   └── QuotaExceeded     StorageQuotaExceeded 413  the user's stored bytes would pass their quota
    └── Unavailable           ServiceUnavailable   503  a dependency (database, Redis, storage) is down; retry
        └── StorageFull       ServiceUnavailable   503  the store refused a write for lack of space
                                                        (ENOSPC, a quota, S3's 507): retrying does not
                                                        help until space is freed
"""

from __future__ import annotations


class ProfilerHubError(Exception):
    """Base of every domain error; ``message`` is safe to show to the caller."""

    code = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(ProfilerHubError):
    code = "ValidationError"


class Unauthorized(ProfilerHubError):
    code = "Unauthorized"


class AccessDenied(ProfilerHubError):
    code = "AccessDenied"


class NotFound(ProfilerHubError):
    code = "ResourceNotFound"


class Conflict(ProfilerHubError):
    code = "ResourceInUse"


class LimitExceeded(ProfilerHubError):
    code = "ResourceLimitExceeded"


class Throttled(LimitExceeded):
    """Too many attempts from one client; try again after ``retry_after`` seconds."""

    code = "ThrottlingException"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


class PayloadTooLarge(ProfilerHubError):
    code = "PayloadTooLarge"


class QuotaExceeded(PayloadTooLarge):
    code = "StorageQuotaExceeded"


class Unavailable(ProfilerHubError):
    code = "ServiceUnavailable"


class StorageFull(Unavailable):
    """A write refused because the store has no space left (a full disk or volume, a quota).

    Still ``Unavailable`` to callers that only retry later (an upload answers 503); work that
    would redo a lot before writing again (ingest) fails at once instead of looping on it.
    """


HTTP_STATUS: dict[type[ProfilerHubError], int] = {
    InvalidInput: 400,
    Unauthorized: 401,
    AccessDenied: 403,
    NotFound: 404,
    Conflict: 409,
    PayloadTooLarge: 413,
    LimitExceeded: 429,
    Unavailable: 503,
}
"""The HTTP status of each domain error (a subclass answers as its nearest listed base)."""


def http_status(exc: ProfilerHubError) -> int:
    """``exc``'s status from :data:`HTTP_STATUS`; 500 for an error the table does not cover (a bug)."""
    for cls in type(exc).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return 500


def http_answer(exc: ProfilerHubError) -> tuple[int, dict[str, dict[str, str]], dict[str, str]]:
    """``(status, body, headers)`` of the answer to ``exc``: the error shape, with
    ``WWW-Authenticate`` on a 401 and ``Retry-After`` when throttled."""
    status = http_status(exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    if isinstance(exc, Throttled):
        headers = {"Retry-After": str(exc.retry_after)}
    return status, {"error": {"code": exc.code, "message": exc.message}}, headers


__all__ = [
    "HTTP_STATUS",
    "AccessDenied",
    "Conflict",
    "InvalidInput",
    "LimitExceeded",
    "NotFound",
    "PayloadTooLarge",
    "ProfilerHubError",
    "QuotaExceeded",
    "StorageFull",
    "Throttled",
    "Unauthorized",
    "Unavailable",
    "http_answer",
    "http_status",
]
