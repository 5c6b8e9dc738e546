"""Domain exceptions shared by every server-side package.

They carry no HTTP status: the hub and the app map them in one place
(``code`` is the public error code in ``{"error": {"code", "message"}}``).

    ProfilerHubError
    ├── InvalidInput          ValidationError      bad names, bad fields, unsafe storage keys
    ├── Unauthorized          Unauthorized         no, unknown, revoked or expired credentials
    ├── AccessDenied          AccessDenied         known caller, action not allowed
    ├── NotFound              ResourceNotFound     missing (or hidden, where existence would leak)
    ├── Conflict              ResourceInUse        state forbids it (has users, live apps, duplicate)
    ├── LimitExceeded         ResourceLimitExceeded  quota reached
    │   └── Throttled         ThrottlingException    too many attempts; ``retry_after`` seconds
    ├── PayloadTooLarge       PayloadTooLarge      upload over a configured limit
    │   └── QuotaExceeded     StorageQuotaExceeded the user's stored bytes would pass their quota
    └── Unavailable           ServiceUnavailable   a dependency (database, Redis, storage) is down; retry
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


__all__ = [
    "AccessDenied",
    "Conflict",
    "InvalidInput",
    "LimitExceeded",
    "NotFound",
    "PayloadTooLarge",
    "ProfilerHubError",
    "QuotaExceeded",
    "Throttled",
    "Unauthorized",
    "Unavailable",
]
