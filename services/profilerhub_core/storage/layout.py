"""Where a job's objects live, so every writer and reader builds the same keys.

Keys are relative to the store (whose own prefix, from ``s3://bucket/prefix``, comes first)::

    {domain_id}/{user_id}/jobs/{job_id}/raw/...          what the SDK uploads
    {domain_id}/{user_id}/jobs/{job_id}/processed/...    what ingest writes

Every folder is named by an immutable id, never by a name: a name is free again once its domain
or user is deleted, and whoever takes it next must not inherit the old owner's objects. An id is
never reused, so a new ``carol`` gets a folder nobody ever wrote to. Objects are deleted with their
owner (job, user, domain), and the storage sweeper removes whatever a crash left behind
(``profilerhub_worker.sweep``).

Every part is checked: an id is letters, digits, ``.``, ``_`` and ``-`` (starting with a letter or
digit, at most 128), and the name under ``raw/`` or ``processed/`` must be a safe relative key.
Anything else raises ``InvalidInput``. The ``*_prefix`` functions return folders ending in ``/``,
ready for ``list`` and ``delete_prefix``.
"""

from __future__ import annotations

import re

from profilerhub_core.errors import InvalidInput

from .keys import matching, validate_key

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

JOBS = "jobs"
RAW = "raw"
PROCESSED = "processed"


def _id(kind: str, value: str) -> str:
    rule = "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
    return matching(value, _ID, f"{kind} id", rule)


def is_id(value: str) -> bool:
    """Whether ``value`` could be a folder's id (what the sweeper looks at; anything else it leaves)."""
    return bool(_ID.fullmatch(value))


def domain_prefix(domain_id: str) -> str:
    """``{domain_id}/``: everything stored for one domain (``delete_prefix`` on domain delete)."""
    return f"{_id('domain', domain_id)}/"


def user_prefix(domain_id: str, user_id: str) -> str:
    """``{domain_id}/{user_id}/``: everything stored for one user (what their app may read)."""
    return f"{domain_prefix(domain_id)}{_id('user', user_id)}/"


def jobs_prefix(domain_id: str, user_id: str) -> str:
    """``{domain_id}/{user_id}/jobs/``: all of one user's jobs."""
    return f"{user_prefix(domain_id, user_id)}{JOBS}/"


def job_prefix(domain_id: str, user_id: str, job_id: str) -> str:
    """``…/jobs/{job_id}/``: one job, raw and processed (``delete_prefix`` on job delete)."""
    return f"{jobs_prefix(domain_id, user_id)}{_id('job', job_id)}/"


def raw_prefix(domain_id: str, user_id: str, job_id: str) -> str:
    """``…/jobs/{job_id}/raw/``: what the SDK uploaded for the job."""
    return f"{job_prefix(domain_id, user_id, job_id)}{RAW}/"


def processed_prefix(domain_id: str, user_id: str, job_id: str) -> str:
    """``…/jobs/{job_id}/processed/``: what ingest wrote for the job."""
    return f"{job_prefix(domain_id, user_id, job_id)}{PROCESSED}/"


def raw_key(domain_id: str, user_id: str, job_id: str, name: str) -> str:
    """The key of ``name`` (may contain ``/``, e.g. ``rank0/trace.json.gz``) under the job's ``raw/``."""
    return validate_key(raw_prefix(domain_id, user_id, job_id) + _relative(name))


def processed_key(domain_id: str, user_id: str, job_id: str, name: str) -> str:
    """The key of ``name`` under the job's ``processed/``."""
    return validate_key(processed_prefix(domain_id, user_id, job_id) + _relative(name))


def relative_name(key: str, prefix: str) -> str:
    """``key`` with the folder ``prefix`` removed (``raw_prefix(...)`` + ``a/b`` -> ``a/b``)."""
    folder = prefix if prefix.endswith("/") or not prefix else prefix + "/"
    if not key.startswith(folder) or key == folder:
        raise InvalidInput(f"storage key {key!r} is not under {folder!r}")
    return key[len(folder) :]


def _relative(name: str) -> str:
    validate_key(name)
    return name


__all__ = [
    "LIVE_SERIES",
    "LIVE_TENSORS",
    "RAW_TENSORS",
    "TENSORS",
    "STATUS",
    "SUMMARY",
    "JOBS",
    "PROCESSED",
    "RAW",
    "domain_prefix",
    "is_id",
    "job_prefix",
    "jobs_prefix",
    "processed_key",
    "processed_prefix",
    "raw_key",
    "raw_prefix",
    "relative_name",
    "user_prefix",
]

SUMMARY = "summary.json"
"""``processed/summary.json``: the full summary ingest writes (the row keeps a compact copy)."""
STATUS = "status.json"
"""``processed/status.json``: ``{"job_id", "name", "status", "failure_reason", "finished_at"}`` once
ingest ends, so a reader of storage alone (the profiler app) knows the outcome."""
LIVE_SERIES = "live/series.npz"
"""``processed/live/series.npz``: a running job's series as the live rules last read its chunks
(written by the worker's live scan, read by the hub's metrics, CloudWatch and training-job answers)."""
RAW_TENSORS = "tensors"
"""``raw/tensors/``: ``ph.watch``'s chunks (``NNNNNN.jsonl.gz``) and, under ``raw/tensors/full/``,
the tensors saved whole (``rank<r>/NNNNNNNN.npy``), named by the chunks' ``"kind": "full"`` lines."""
TENSORS = "tensors.npz"
"""``processed/tensors.npz``: the job's ``TensorTable`` (``profilerhub_analysis.tensors``), written
at ingest from every ``raw/tensors/`` chunk."""
LIVE_TENSORS = "live/tensors.npz"
"""``processed/live/tensors.npz``: a running job's ``TensorTable`` as the live scan last read its
chunks (read by the live rules; the hub and app read new chunks on top of it)."""
