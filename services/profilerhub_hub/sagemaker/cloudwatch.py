"""CloudWatch over ``/cloudwatch``: a job's metrics as SageMaker publishes a training job's.

    ListMetrics          the metrics of the jobs the caller may see (``ListJobs``)
    GetMetricStatistics  one metric of one job: Statistics and ExtendedStatistics per period
    GetMetricData        MetricStat queries (metric math and Metrics Insights: refused)

Namespace ``/aws/sagemaker/TrainingJobs``; a metric's job is named by the dimension
``Host={job}/algo-{rank+1}`` (SageMaker's, one per instance) or ``TrainingJobName={job}``, where
``{job}`` is a job's name or its id. An SDK run is one process, so a job's samples are one rank's:
its run's ``RANK`` (``job.json``'s ``rank``, 0 without one), the instance of its host. A
distributed run is one job per rank, all of the same name: ``Host=bert-ft/algo-2`` is the newest
job named ``bert-ft`` the caller can see whose rank is 1 (its log stream is ``bert-ft/algo-2-…``
too), ``TrainingJobName=bert-ft`` the newest of the name. Metric names and the statistics are
``profilerhub_analysis.cloudwatch_stats``'s, over the job's series (``job_control.job_series``:
while the job runs, what it has streamed).

As CloudWatch does, a metric that does not exist (another namespace, an unknown job, a hidden one,
a name the job lacks, another ``Unit``) answers no datapoints rather than an error, and so does a
period finer than what the series retention kept. More than 1,440 datapoints asked of
``GetMetricStatistics`` is ``InvalidParameterCombination``, as on AWS.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from profilerhub_analysis import cloudwatch_stats
from profilerhub_analysis.metrics_api import MetricQueryError, ResolutionNotKept
from profilerhub_analysis.series import JobSeries
from profilerhub_core.db.models import Job, JobStatus, utcnow
from profilerhub_core.errors import NotFound
from profilerhub_hub import job_control
from profilerhub_hub.permissions import Action
from profilerhub_hub.sagemaker.errors import AwsError

if TYPE_CHECKING:
    from profilerhub_hub.sagemaker.call import Call

PREFIX = "/cloudwatch"
NAMESPACE = "/aws/sagemaker/TrainingJobs"
MAX_DATAPOINTS = 1440  # GetMetricStatistics' limit on AWS
MAX_METRIC_DATA_POINTS = 100_800  # GetMetricData's
JOBS_PER_PAGE = 25  # ListMetrics pages by jobs
_HOST = re.compile(r"(?P<job>.+)/algo-(?P<instance>[0-9]{1,6})")
#: Jobs of one name looked through for the one of a rank (newest first).
MAX_SAME_NAME = 64


def _combination(message: str) -> AwsError:
    return AwsError("InvalidParameterCombination", message)


def _value(message: str) -> AwsError:
    return AwsError("InvalidParameterValue", message)


def _epoch_ns(value: Any, member: str) -> int:
    try:
        if isinstance(value, int | float):
            return int(round(float(value) * 1e9))
        at = datetime.fromisoformat(str(value))
        return int(round((at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() * 1e9))
    except (ValueError, OverflowError):
        raise _value(f"{member} must be a timestamp") from None


class _Series:
    """The request's jobs and their series, each read once (a GetMetricData's queries share them)."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self.store = call.door.open_store()
        self._jobs: dict[tuple[str, int | None], Job | None] = {}
        self._series: dict[str, JobSeries] = {}
        self._ranks: dict[str, int] = {}

    def rank(self, job: Job) -> int:
        """The rank of the job's run: a Ready job's summary says it, else its ``raw/job.json``."""
        if job.id not in self._ranks:
            section = (job.summary or {}).get("job")
            if isinstance(section, dict) and "rank" in section:
                rank = section.get("rank")
            else:
                rank = job_control.run_rank(self.store, job)
            self._ranks[job.id] = rank if isinstance(rank, int) and rank >= 0 else 0
        return self._ranks[job.id]

    def host(self, job: Job, ref: str) -> str:
        return f"{ref}/algo-{self.rank(job) + 1}"

    def job(self, namespace: str, dimensions: list[dict[str, Any]]) -> Job | None:
        """The job a metric's namespace and dimensions name, if the caller may read it."""
        if namespace != NAMESPACE:
            return None
        given = {d["Name"]: d.get("Value") for d in dimensions}
        if len(given) != 1 or not (given.get("Host") or given.get("TrainingJobName")):
            return None
        ref, rank = given.get("TrainingJobName"), None
        if ref is None:
            host = _HOST.fullmatch(str(given["Host"]))
            if host is None or int(host["instance"]) < 1:
                return None
            ref, rank = host["job"], int(host["instance"]) - 1
        if (ref, rank) not in self._jobs:
            self._jobs[(ref, rank)] = self._find(ref, rank)
        return self._jobs[(ref, rank)]

    def _find(self, ref: str, rank: int | None) -> Job | None:
        """The job ``ref`` names (its id, else the newest of that name) or, with ``rank``, the
        newest of those whose run's rank it is; None when there is none the caller may read."""
        call = self.call
        visible = job_control.visible_jobs(call.caller)
        job = call.session.scalar(visible.where(Job.id == ref))
        if job is not None:
            candidates = [job]
        else:
            newest = visible.where(Job.name == ref).order_by(Job.created_at.desc(), Job.id.desc())
            candidates = list(call.session.scalars(newest.limit(1 if rank is None else MAX_SAME_NAME)))
        found = next((j for j in candidates if rank is None or self.rank(j) == rank), None)
        if found is None:
            return None
        try:
            domain, user = job_control.owner_of(call.session, found)
            call.allowed(job_control.job_target(call.caller, domain, user), Action.ReadJob)
        except NotFound:
            return None
        return found

    def of(self, job: Job) -> JobSeries:
        if job.id not in self._series:
            self._series[job.id] = job_control.job_series(self.store, job)
        return self._series[job.id]


def _statistics(
    series: JobSeries, name: str, stats: tuple[str, ...], period: int, start_ns: int, end_ns: int
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    try:
        return cloudwatch_stats.statistics(series, name, stats, float(period), start_ns, end_ns)
    except ResolutionNotKept:
        return np.zeros(0, np.int64), {s: np.zeros(0) for s in stats}
    except MetricQueryError as exc:
        raise _value(str(exc)) from None


def get_metric_statistics(call: Call) -> dict[str, Any]:
    p = call.params
    basic, extended = list(p.get("Statistics") or []), list(p.get("ExtendedStatistics") or [])
    if not basic and not extended:
        raise _combination("Must specify either Statistics or ExtendedStatistics")
    for stat in extended:
        if stat in cloudwatch_stats.BASIC or not _is_percentile(stat):
            raise _value(f"The extended statistic {stat[:40]!r} is not supported; use percentiles pNN")
    start, end, period = (
        _epoch_ns(p["StartTime"], "StartTime"),
        _epoch_ns(p["EndTime"], "EndTime"),
        p["Period"],
    )
    if end <= start:
        raise _value("The parameter EndTime must be greater than StartTime")
    asked = -(-(end - start) // (period * 1_000_000_000))
    if asked > MAX_DATAPOINTS:
        raise _combination(
            f"You have requested up to {asked} datapoints, which exceeds the limit of {MAX_DATAPOINTS}. "
            "You may reduce the datapoints requested by increasing Period, or decreasing the time range."
        )
    name, answer = p["MetricName"], {"Label": p["MetricName"], "Datapoints": []}
    reader = _Series(call)
    job = reader.job(p["Namespace"], p.get("Dimensions") or [])
    unit = cloudwatch_stats.unit_of(name)
    if job is None or p.get("Unit", unit) != unit:
        return answer
    stamps, values = _statistics(reader.of(job), name, tuple(basic + extended), period, start, end)
    for i, at in enumerate(stamps.tolist()):
        point: dict[str, Any] = {"Timestamp": at / 1e9, "Unit": unit}
        for stat in basic:
            point[stat] = _number(values[stat][i])
        if extended:
            point["ExtendedStatistics"] = {stat: _number(values[stat][i]) for stat in extended}
        answer["Datapoints"].append(point)
    return answer


def _is_percentile(stat: str) -> bool:
    try:
        cloudwatch_stats.check_stat(stat)
    except MetricQueryError:
        return False
    return stat.startswith("p")


def _number(value: Any) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def get_metric_data(call: Call) -> dict[str, Any]:
    """MetricStat queries only; ``ScanBy`` orders each result's points (newest first by default)."""
    p = call.params
    start, end = _epoch_ns(p["StartTime"], "StartTime"), _epoch_ns(p["EndTime"], "EndTime")
    if end <= start:
        raise _value("The parameter EndTime must be greater than StartTime")
    reader, results, total = _Series(call), [], 0
    limit = min(p.get("MaxDatapoints") or MAX_METRIC_DATA_POINTS, MAX_METRIC_DATA_POINTS)
    for query in p["MetricDataQueries"]:
        if "Expression" in query:
            raise _value(
                f"Query {query['Id']}: metric math and Metrics Insights expressions are not supported by "
                "ProfilerHub; ask for each metric with MetricStat"
            )
        stat = query.get("MetricStat")
        if stat is None:
            raise _value(f"Query {query['Id']}: give MetricStat")
        try:
            cloudwatch_stats.check_stat(stat["Stat"])
        except MetricQueryError as exc:
            raise _value(f"Query {query['Id']}: {exc}") from None
        metric = stat["Metric"]
        name = metric.get("MetricName", "")
        result: dict[str, Any] = {"Id": query["Id"], "Label": query.get("Label") or name,
                                  "Timestamps": [], "Values": [], "StatusCode": "Complete"}  # fmt: skip
        job = reader.job(metric.get("Namespace", ""), metric.get("Dimensions") or [])
        unit = cloudwatch_stats.unit_of(name)
        if job is not None and stat.get("Unit", unit) == unit:
            stamps, values = _statistics(reader.of(job), name, (stat["Stat"],), stat["Period"], start, end)
            column = values[stat["Stat"]]
            keep = np.isfinite(column)
            stamps, column = stamps[keep], column[keep]
            if p.get("ScanBy", "TimestampDescending") == "TimestampDescending":
                stamps, column = stamps[::-1], column[::-1]
            total += len(stamps)
            if total > limit:
                raise _value(f"The queries ask for more than MaxDatapoints ({limit}) datapoints")
            result["Timestamps"] = [t / 1e9 for t in stamps.tolist()]
            result["Values"] = column.tolist()
        if query.get("ReturnData", True):
            results.append(result)
    return {"MetricDataResults": results, "Messages": []}


def list_metrics(call: Call) -> dict[str, Any]:
    """The metrics of the jobs the caller may see, ``JOBS_PER_PAGE`` jobs a page, newest first;
    filtered by ``Namespace``, ``MetricName``, ``Dimensions`` (``Host``/``TrainingJobName`` with a
    value: that job alone; without: every job) and ``RecentlyActive`` (jobs changed within 3 h)."""
    p = call.params
    call.allowed(call.own_target(), Action.ListJobs)
    empty: dict[str, Any] = {"Metrics": []}
    if p.get("Namespace", NAMESPACE) != NAMESPACE:
        return empty
    filters = {d["Name"]: d.get("Value") for d in p.get("Dimensions") or []}
    if set(filters) - {"Host", "TrainingJobName"} or len(filters) > 1:
        return empty
    reader = _Series(call)
    if any(filters.values()):
        name, value = next(iter(filters.items()))
        job = reader.job(NAMESPACE, [{"Name": name, "Value": value}])
        rows, token = ([job] if job is not None else []), None
    else:
        stmt = job_control.visible_jobs(call.caller)
        if p.get("RecentlyActive"):
            stmt = stmt.where(Job.updated_at > utcnow() - timedelta(hours=3))
        limited = call.with_params(MaxResults=JOBS_PER_PAGE)
        rows, token = limited.page(
            stmt, [Job.created_at, Job.id], f"metrics:{p.get('RecentlyActive')}", descending=True
        )
    newest = _newest_of_names(call, rows)
    metrics = []
    dimension = "TrainingJobName" if "TrainingJobName" in filters else "Host"
    for job in rows:
        ids = newest.get(job.name, [])
        if dimension == "TrainingJobName":
            value = job.name if ids[:1] == [job.id] else job.id
        else:  # by name when no newer job of that name has its rank
            newer = ids[: ids.index(job.id)] if job.id in ids else None
            by_name = newer is not None and _rank_free(reader, call, newer, reader.rank(job))
            value = reader.host(job, job.name if by_name else job.id)
        for metric in _names(reader, job):
            if p.get("MetricName") in (None, metric):
                dims = [{"Name": dimension, "Value": value}]
                metrics.append({"Namespace": NAMESPACE, "MetricName": metric, "Dimensions": dims})
    answer: dict[str, Any] = {"Metrics": metrics}
    if token:
        answer["NextToken"] = token
    return answer


def _names(reader: _Series, job: Job) -> list[str]:
    """A Ready job's names from its row's summary (no storage read) when it has one, else its series."""
    summary = job.summary or {}
    if job.status is JobStatus.Ready and "metrics" in summary and job.series_deleted_at is None:
        series = JobSeries()
        series.metrics = {name: (np.zeros(0), np.zeros(0), np.zeros(0)) for name in summary["metrics"]}
        series.sys = {name: np.zeros(0) for name in (summary.get("system") or {}).get("metrics") or {}}
        return cloudwatch_stats.metric_names(series)
    return cloudwatch_stats.metric_names(reader.of(job))


def _rank_free(reader: _Series, call: Call, newer: list[str], rank: int) -> bool:
    """No job of ``newer`` (ids of newer jobs of one name) has ``rank``: then the name and the
    rank's host alone mean the job (``_Series._find``)."""
    if len(newer) >= MAX_SAME_NAME:
        return False
    for job_id in newer:
        other = call.session.get(Job, job_id)
        if other is not None and reader.rank(other) == rank:
            return False
    return True


def _newest_of_names(call: Call, rows: list[Job]) -> dict[str, list[str]]:
    """For each name on the page, the ids of the visible jobs of that name, newest first (the
    first is what the name alone means); the others are named by id."""
    names = sorted({job.name for job in rows})
    if not names:
        return {}
    stmt = (
        job_control.visible_jobs(call.caller).with_only_columns(Job.name, Job.id).where(Job.name.in_(names))
    )
    ranked = call.session.execute(stmt.order_by(Job.created_at.desc(), Job.id.desc())).all()
    newest: dict[str, list[str]] = {}
    for name, job_id in ranked:
        newest.setdefault(name, []).append(job_id)
    return newest


OPERATIONS = {
    "ListMetrics": list_metrics,
    "GetMetricStatistics": get_metric_statistics,
    "GetMetricData": get_metric_data,
}

__all__ = ["NAMESPACE", "OPERATIONS", "PREFIX"]
