"""What the hub reads of a job's processed files: the HTML report and the metrics.

``processed/summary.json``, ``processed/rules.json`` and ``processed/series.npz`` (written at
ingest) are read from the job store; the work is the analysis engine's (``html_report``,
``metrics_api``). The report exists once the job is Ready (before: ``Conflict``); the metrics
also while the run is still going, from what it has streamed (``job_control.job_series``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from profilerhub_core.db.models import Job, JobStatus
from profilerhub_core.errors import Conflict, InvalidInput, NotFound, Unavailable
from profilerhub_core.jobstorage import JobPlace, place_of
from profilerhub_core.storage import ObjectStore
from profilerhub_core.storage.layout import PROGRESS, SERIES, SUMMARY, TENSORS
from profilerhub_hub import job_control

if TYPE_CHECKING:
    from profilerhub_analysis.series import JobSeries

# The analysis engine (numpy) is imported by the functions that use it, not at the hub's start.


def ingest_progress(store: ObjectStore, job: Job) -> dict[str, int] | None:
    """A Processing job's ingest so far (``{"traces_done", "traces", "bytes_done", "bytes"}``, written
    by a fanned-out ingest: ``profilerhub_worker.ingest.fanout``); None otherwise, or when storage
    does not say."""
    if job.status is not JobStatus.Processing:
        return None
    try:
        doc = orjson.loads(store.get(place_of(job).processed_key(PROGRESS)))
    except (NotFound, Unavailable, OSError, ValueError):  # not written yet, or storage away a moment
        return None
    if not isinstance(doc, dict):
        return None
    fields = ("traces_done", "traces", "bytes_done", "bytes")
    return {k: int(doc[k]) for k in fields if isinstance(doc.get(k), int)} or None


def _ready(job: Job) -> None:
    if job.status is not JobStatus.Ready:
        raise Conflict(f"Job '{job.id}' is {job.status.value}; its report and metrics exist once it is Ready")


def _series(store: ObjectStore, place: JobPlace) -> JobSeries:
    from profilerhub_analysis.series import JobSeries, unpack

    try:
        return unpack(store.get(place.processed_key(SERIES)))
    except NotFound:  # ingested before series were written: nothing at full resolution
        return JobSeries()


def report(store: ObjectStore, place: JobPlace, job: Job) -> str:
    """The job's profiling report (HTML)."""
    from profilerhub_analysis.html_report import render_report
    from profilerhub_analysis.tensors import TensorTable

    _ready(job)
    summary = orjson.loads(store.get(place.processed_key(SUMMARY)))
    try:
        tensors = TensorTable.unpack(store.get(place.processed_key(TENSORS)))
    except NotFound:  # the run watched no model
        tensors = None
    return render_report(summary, job.rule_results, _series(store, place), tensors)


def metrics(
    store: ObjectStore,
    place: JobPlace,
    job: Job,
    name: str | None,
    stat: str,
    period: float,
    start: int | None,
    end: int | None,
) -> dict[str, Any]:
    """Without ``name``: the metric names, final values and resolution; with it, its datapoints.
    A running job answers from what it has streamed (``"final": false``)."""
    from profilerhub_analysis.metrics_api import MetricQueryError, datapoints, final_values, metric_names

    if not job_control.is_running(job):
        _ready(job)
    if job.series_deleted_at is not None:
        raise NotFound(
            f"Job '{job.id}''s series were deleted on {job.series_deleted_at:%Y-%m-%d} by the hub's series "
            "retention setting; its summary, rules and report remain"
        )
    series = job_control.job_series(store, job)
    if name is None:
        return {
            "job_id": job.id,
            "final": job.status is JobStatus.Ready,
            "resolution_s": series.resolution_ns / 1e9 or None,
            "metrics": metric_names(series),
            "FinalMetricDataList": final_values(series),
        }
    try:
        points = datapoints(series, name, stat, period, start, end)
    except MetricQueryError as exc:
        raise InvalidInput(str(exc)) from exc
    return {"job_id": job.id, "name": name, "stat": stat, "period": period, "datapoints": points}


__all__ = ["metrics", "report"]
