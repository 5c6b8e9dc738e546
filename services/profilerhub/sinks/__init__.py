"""Where a run's raw files go: a local directory, S3, or the hub.

All three implement :class:`~profilerhub.sinks.base.Sink`; the SDK's upload queue and
``profilerhub upload`` drive them the same way (``open`` once, ``put`` each file, ``complete``).
Modules here import their clients (boto3, httpx) lazily so ``import profilerhub`` stays cheap.
"""

from __future__ import annotations

from typing import Any

from .base import Sink, SinkError

__all__ = ["Sink", "SinkError", "make_sink"]


def make_sink(
    kind: str,
    location: str,
    job: str,
    token: str | None = None,
    metric_definitions: list[dict[str, str]] | None = None,
    rules: list[dict[str, Any]] | None = None,
    stop_on: list[str] | None = None,
) -> Sink:
    """Build the sink for ``kind`` (``local``, ``s3``, ``hub``) at ``location`` for ``job``."""
    if kind == "local":
        from .local import LocalSink

        return LocalSink(location, job)
    if kind == "s3":
        from .s3 import S3Sink

        return S3Sink(location, job)
    if kind == "hub":
        from .hub import HubSink

        return HubSink(location, token, job, metric_definitions, rules=rules, stop_on=stop_on)
    raise ValueError(f"unknown sink {kind!r}")
