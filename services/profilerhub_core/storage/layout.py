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

What is under a job's ``processed/``: every name is defined here, once, and imported by each module
that writes or reads it (nothing spells ``"rules.json"`` or ``"processed/"`` by hand). Each is
written by one module of ingest (``profilerhub_worker.ingest``):

    name                           written by            read by
    summary.json      SUMMARY      ingest.write          app (owned, jobdata), hub (job_outputs)
    status.json       STATUS       ingest.write          app (owned: a Ready job's list figures)
    ranks.json        RANKS        ingest.write (at the  app (routes/analysis: the ranks table
                                   join)                 and the all-ranks overview)
    rules.json        RULES        ingest.write          app (routes/rules); final at ingest,
                                   (put_rules: ingest    latest live evaluation before
                                   and the live scan)
    series.npz        SERIES       ingest.read           hub (metrics, report, CloudWatch), live
                                   (the retention task   and final rules; rolled up in place by
                                   rolls it up in place) ``profilerhub_worker.retention``
    tensors.npz       TENSORS      ingest (ph.watch      rules.model, the report, the app's
                                   reductions)           Model page
    live/tensors.npz  LIVE_TENSORS ingest.live_rules     the live rules; hub and app (new chunks
                                                         read on top of it)
    live/series.npz   LIVE_SERIES  ingest.live_rules     hub (a running job's metrics)
    live/state.json   LIVE_STATE   ingest.live_rules     ingest.live_rules (chunks read so far)
    live/captures.json LIVE_CAPTURES ingest.captures     app (jobdata: a running job's traces)
    live/captures/<id>/            ingest.captures       app, through live/captures.json's
                                   (a trace folder, as   entries (as traces/<n>-<name>/)
                                   traces/<n>-<name>/)
    traces/<n>-<name>/             ingest.views          app (jobdata), through the summary's
      dashboard.json  TRACE_DASHBOARD                    trace entry ("dashboard", "timeline",
      tb_views.json   TRACE_TB_VIEWS                     "tb_views", "tb_calls")
      tb_calls.npz    TRACE_TB_CALLS (every operator call: the Operators view over a time range)
      timeline/       TRACE_TIMELINE (the files of ``TraceTimeline.to_files()``, named by
                                   ``profilerhub_analysis.timeline.bundle``), then
      timeline/done   TIMELINE_DONE  last, so a reader never maps a half-written folder

Adding a file under ``processed/``: its name here (a constant with a docstring, and a row above),
one writer in ``profilerhub_worker.ingest``, and every reader importing the constant.
"""

from __future__ import annotations

import re

from profilerhub_core.errors import InvalidInput

from .keys import matching, validate_key

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

JOBS = "jobs"
RAW = "raw"
PROCESSED = "processed"
RAW_TENSORS = "tensors"
"""``raw/tensors/``: ``ph.watch``'s chunks (``NNNNNN.jsonl.gz``) and, under ``raw/tensors/full/``,
the tensors saved whole (``rank<r>/NNNNNNNN.npy``), named by the chunks' ``"kind": "full"`` lines."""

# -- names under a job's processed/ (the table in the module docstring) -----------------------------

SUMMARY = "summary.json"
"""``processed/summary.json``: the full summary ingest writes (the row keeps a compact copy)."""
STATUS = "status.json"
"""``processed/status.json``: ``{"job_id", "name", "status", "failure_reason", "finished_at"}`` once
ingest ends, so a reader of storage alone (the profiler app) knows the outcome."""
RANKS = "ranks.json"
"""``processed/ranks.json``: the per-rank table, stragglers and all-ranks overview
(``ranks.rank_table`` + ``rank_activity.overview``), written once at the join so a job of many ranks
opens its ranks panel without reading every trace's report."""
RULES = "rules.json"
"""``processed/rules.json``: the latest rule evaluation (live while the run goes on, final at ingest),
for readers of storage alone (the profiler app)."""
SERIES = "series.npz"
"""``processed/series.npz``: the job's metric and system series at full resolution (``series.pack``),
what the metrics API, the report and the rules read; the retention task rolls it up in place."""
TENSORS = "tensors.npz"
"""``processed/tensors.npz``: the job's ``TensorTable`` (``profilerhub_analysis.tensors``), written
at ingest from every ``raw/tensors/`` chunk: the ``ph.watch`` reductions per tensor and saved step."""
LIVE_TENSORS = "live/tensors.npz"
"""``processed/live/tensors.npz``: a running job's ``TensorTable`` as the live scan last read its
chunks (read by the live rules; the hub and app read new chunks on top of it)."""
LIVE_SERIES = "live/series.npz"
"""``processed/live/series.npz``: a running job's series as the live rules last read its chunks
(written by the worker's live scan, read by the hub's metrics, CloudWatch and training-job answers)."""
LIVE_STATE = "live/state.json"
"""``processed/live/state.json``: which chunks the live scan has read (and its window memo's shape)."""
LIVE_CAPTURES = "live/captures.json"
"""``processed/live/captures.json``: a running job's on-demand captures ingested so far, as summary
trace entries (``{"traces": [...]}``, in the order they were ingested; each entry's ``capture`` is
its id), rewritten after each; ingest at the job's end empties ``processed/`` and reads them again."""
LIVE_CAPTURE_FOLDER = "live/captures"
"""``processed/live/captures/<id>/``: one capture's trace folder (laid out as :func:`trace_folder`'s)."""
_CAPTURE = re.compile(r"torch/[^/]+\.capture-(?P<id>[A-Za-z0-9]{1,64})\.[^/]*json(?:\.gz)?")
TRACES = "traces"
"""``processed/traces/<n>-<name>/``: one folder per trace (:func:`trace_folder`)."""
TRACE_DASHBOARD = "dashboard.json"
"""In a trace's folder: the dashboard panels the summary does not hold (``dashboard.trace_panels``)."""
TRACE_TB_VIEWS = "tb_views.json"
"""In a trace's folder: the TensorBoard profiler plugin's views (``profilerhub_analysis.tbviews``)."""
TRACE_TB_CALLS = "tb_calls.npz"
"""In a trace's folder: every operator call with its figures (``tbviews.calls``), for the Operators
view over a time range (a timeline selection)."""
TRACE_TIMELINE = "timeline"
"""In a trace's folder: the timeline bundle (``TraceTimeline.to_files()``), memory-mapped by the app."""
TIMELINE_DONE = "done"
"""In a trace's ``timeline/``: written last; a reader never maps a folder without it."""
TRACE_PARTS = "parts"
"""``processed/parts/<n>.json``: trace ``n``'s summary entry (or why it was left out), written by
whichever worker parsed it when a job's traces are fanned out (``ingest.fanout``), read at the join."""
PROGRESS = "progress.json"
"""``processed/progress.json``: ``{"traces_done": k, "traces": n}`` while a fanned-out ingest runs."""


def trace_part(index: int) -> str:
    """``parts/<n>.json``: the part of trace number ``index`` (``TRACE_PARTS``)."""
    return f"{TRACE_PARTS}/{index}.json"


def trace_folder(index: int, rel: str) -> str:
    """``traces/<n>-<name>``: where trace number ``index`` of a job (raw file ``rel``) goes under
    ``processed/`` (``name``: the file's name without ``.json[.gz]``, made safe for a key)."""
    name = rel.rsplit("/", 1)[-1]
    for suffix in (".json.gz", ".json"):
        name = name.removesuffix(suffix)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:100] or "trace"
    return f"{TRACES}/{index}-{safe}"


def capture_id(rel: str) -> str | None:
    """The capture id of a raw file ``rel`` (under ``raw/``) that is an on-demand capture's trace
    (the SDK names it ``torch/<host>_<pid>.capture-<id>.<n>.pt.trace.json.gz``), else None."""
    match = _CAPTURE.fullmatch(rel)
    return match["id"] if match else None


def processed_name(name: str) -> str:
    """``processed/{name}``: ``name`` as the job's folder names it (what a summary's trace entry
    records, and what an app's store, rooted at the owner's folder, reads under ``jobs/{job_id}/``)."""
    return f"{PROCESSED}/{_relative(name)}"


def owner_job_prefix(job_id: str) -> str:
    """``jobs/{job_id}/``: one job's folder relative to its owner's (:func:`user_prefix`), where the
    profiler app's store is rooted."""
    return f"{JOBS}/{_id('job', job_id)}/"


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
    "LIVE_TENSORS",
    "RAW_TENSORS",
    "JOBS",
    "LIVE_SERIES",
    "LIVE_STATE",
    "LIVE_CAPTURES",
    "LIVE_CAPTURE_FOLDER",
    "capture_id",
    "PROCESSED",
    "RAW",
    "RANKS",
    "RULES",
    "SERIES",
    "STATUS",
    "SUMMARY",
    "TENSORS",
    "TIMELINE_DONE",
    "TRACES",
    "PROGRESS",
    "TRACE_DASHBOARD",
    "TRACE_PARTS",
    "TRACE_TB_CALLS",
    "TRACE_TB_VIEWS",
    "TRACE_TIMELINE",
    "domain_prefix",
    "is_id",
    "job_prefix",
    "jobs_prefix",
    "owner_job_prefix",
    "processed_key",
    "processed_name",
    "processed_prefix",
    "raw_key",
    "raw_prefix",
    "relative_name",
    "trace_folder",
    "trace_part",
    "user_prefix",
]
