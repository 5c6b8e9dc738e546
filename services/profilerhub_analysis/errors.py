"""Errors raised while reading a trace.

Each carries a one-line ``message`` that is safe to show a user as it is (the CLI prints it and
exits with status 2; the ingest worker stores it on the job).

    TraceError (ValueError)
    ├── TraceFormatError   not gzip/JSON, truncated, no ``traceEvents``, wrong shape
    └── TraceTooLarge      the decompressed trace is over the configured size limit
"""

from __future__ import annotations


class TraceError(ValueError):
    """Base of every trace reading error; ``message`` is one line, fit for a user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TraceFormatError(TraceError):
    """The input is not a readable Chrome-trace/Kineto JSON document."""


class TraceTooLarge(TraceError):
    """The trace is larger than the size limit; raise the limit or use a bigger machine."""


__all__ = ["TraceError", "TraceFormatError", "TraceTooLarge"]
