"""The sink interface and its one error type.

A sink receives whole files, addressed by a relative path inside the job's raw layout
(``job.json``, ``system/000001.jsonl.gz``, ``torch/host_1.1.pt.trace.json.gz`` ...).

Errors are :class:`SinkError` with two flags that tell the caller what to do:

    SinkError
    ├── retryable=True          transient (connection refused, 5xx, disk full): retry with backoff
    ├── fatal=True              the sink can never work (bad token, no such bucket): stop using it
    └── neither                 this one file was refused (4xx): drop it, go on with the next
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

USER_STOP = "StopTrainingJob"
"""The hub's ``X-ProfilerHub-Stop`` when a person stopped the job (not a rule): every run stops."""


class SinkError(Exception):
    """A sink operation failed; ``retryable``/``fatal`` say what to do (see module docstring)."""

    def __init__(self, message: str, *, retryable: bool = False, fatal: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.fatal = fatal


class Sink(ABC):
    """One destination for a job's raw files.

    ``open`` is called once before the first ``put`` (the hub sink registers the job there) and may
    be retried after a retryable error; ``put`` must be idempotent (same path, same bytes: same
    result), so a retry after a lost answer is harmless; ``complete`` marks the job finished.
    """

    #: ``local``, ``s3`` or ``hub``.
    kind: str = ""
    #: The rule the hub asked the run to stop for, or ``USER_STOP`` (learnt from an upload's
    #: answer); hub sink only.
    stop_request: str | None = None
    #: The newest profiler capture the hub asked for (``{"id", "steps", "start_step",
    #: "record_shapes"}``, learnt from an upload's answer); hub sink only.
    capture_request: dict[str, Any] | None = None

    @abstractmethod
    def open(self) -> None:
        """Prepare the destination (create the directory, register the job)."""

    @abstractmethod
    def put(self, path: str, data: bytes) -> None:
        """Store ``data`` as the file ``path`` (relative, ``/``-separated) of the job."""

    @abstractmethod
    def complete(self, report: dict[str, Any] | None = None) -> None:
        """Mark the job complete (after every ``put``); ``report`` says what did not arrive
        (``{"missing_files", "lost_files", "spill": {"host", "dir", "files", "command"}}``)."""

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the files land, for people (a directory, an ``s3://`` URL, a hub job URL)."""

    def where_to_look(self) -> str:
        """Once the run is over, where a person sees it, beyond ``location`` ("" when nothing more)."""
        return ""

    def info(self) -> dict[str, Any]:
        """What ``job.json`` records about the destination (the hub sink adds the job id)."""
        return {"kind": self.kind, "location": self.location}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients and connections."""


def content_type(path: str) -> str:
    """The MIME type a file is sent with; ``.gz`` files are sent as they are (not re-encoded)."""
    if path.endswith(".gz"):
        return "application/gzip"
    if path.endswith(".json"):
        return "application/json"
    if path.endswith(".jsonl"):
        return "application/x-ndjson"
    return "application/octet-stream"


def check_relative_path(path: str) -> str:
    """Refuse absolute paths and ``..`` so a file can never land outside the job."""
    parts = path.split("/")
    if not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise SinkError(f"unsafe file path {path!r}")
    return path
