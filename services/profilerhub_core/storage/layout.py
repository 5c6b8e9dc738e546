"""Where a job's objects live, so every writer and reader builds the same keys.

Keys are relative to the store (whose own prefix, from ``s3://bucket/prefix``, comes first)::

    {domain}/{user}/jobs/{job_id}/raw/...          what the SDK uploads
    {domain}/{user}/jobs/{job_id}/processed/...    what ingest writes

Every part is checked: domain and user follow SageMaker's name rule, a job id is letters, digits,
``.``, ``_`` and ``-`` (starting with a letter or digit), and the name under ``raw/`` or
``processed/`` must be a safe relative key. Anything else raises ``InvalidInput``. The ``*_prefix``
functions return folders ending in ``/``, ready for ``list`` and ``delete_prefix``.
"""

from __future__ import annotations

import re

from profilerhub_core.errors import InvalidInput

from .keys import matching, validate_key

# SageMaker's rule, the same as profilerhub_core.names (kept here so the SDK needs no pydantic).
_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

RAW = "raw"
PROCESSED = "processed"


def _name(kind: str, value: str) -> str:
    rule = "1-63 letters, digits or hyphens, starting and ending with a letter or digit"
    return matching(value, _NAME, f"{kind} name", rule)


def _job_id(job_id: str) -> str:
    rule = "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
    return matching(job_id, _JOB_ID, "job id", rule)


def domain_prefix(domain: str) -> str:
    """``{domain}/``: everything stored for one domain."""
    return f"{_name('domain', domain)}/"


def user_prefix(domain: str, user: str) -> str:
    """``{domain}/{user}/``: everything stored for one user (what their app may read)."""
    return f"{domain_prefix(domain)}{_name('user', user)}/"


def jobs_prefix(domain: str, user: str) -> str:
    """``{domain}/{user}/jobs/``: all of one user's jobs."""
    return f"{user_prefix(domain, user)}jobs/"


def job_prefix(domain: str, user: str, job_id: str) -> str:
    """``{domain}/{user}/jobs/{job_id}/``: one job, raw and processed (``delete_prefix`` on job delete)."""
    return f"{jobs_prefix(domain, user)}{_job_id(job_id)}/"


def raw_prefix(domain: str, user: str, job_id: str) -> str:
    """``…/jobs/{job_id}/raw/``: what the SDK uploaded for the job."""
    return f"{job_prefix(domain, user, job_id)}{RAW}/"


def processed_prefix(domain: str, user: str, job_id: str) -> str:
    """``…/jobs/{job_id}/processed/``: what ingest wrote for the job."""
    return f"{job_prefix(domain, user, job_id)}{PROCESSED}/"


def raw_key(domain: str, user: str, job_id: str, name: str) -> str:
    """The key of ``name`` (may contain ``/``, e.g. ``rank0/trace.json.gz``) under the job's ``raw/``."""
    return validate_key(raw_prefix(domain, user, job_id) + _relative(name))


def processed_key(domain: str, user: str, job_id: str, name: str) -> str:
    """The key of ``name`` under the job's ``processed/``."""
    return validate_key(processed_prefix(domain, user, job_id) + _relative(name))


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
    "STATUS",
    "SUMMARY",
    "PROCESSED",
    "RAW",
    "domain_prefix",
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
