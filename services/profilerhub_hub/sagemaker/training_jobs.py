"""Jobs as SageMaker training jobs: ``DescribeTrainingJob``, ``ListTrainingJobs``, ``StopTrainingJob``.

A ``TrainingJobName`` is a job's name (the newest job of that name the caller can see) or its id;
the ARN is by id (``…:training-job/{job_id}``), so it names one run. The caller sees what the REST
jobs routes show them (``job_control.visible_jobs``), under the same actions (``ListJobs``,
``ReadJob``, ``StopJob``).

Statuses (``TrainingJobStatus`` / ``SecondaryStatus``), from the job's status and whether a
person asked its run to stop (``Job.stop_request``):

    InProgress, running            InProgress / Training
    InProgress completed,          InProgress / Uploading      (the run is over; ingest runs)
      Processing
    Ready                          Completed  / Completed
    Failed                         Failed     / Failed
    stop asked, not yet final      Stopping   / Stopping
    stop asked, Ready or Failed    Stopped    / Stopped

``SecondaryStatusTransitions`` come from the job's own moves (its creation, its ``complete``, and
the state changes the audit log recorded). Members ProfilerHub has no use for are answered with
placeholders the output shape accepts (docs/sagemaker-api.md, "Training jobs").
"""

from __future__ import annotations

import functools
import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
import sqlalchemy as sa

from profilerhub_core.db.models import AuditEvent, Job, JobStatus
from profilerhub_core.errors import Conflict
from profilerhub_core.records import jobs
from profilerhub_hub import job_control
from profilerhub_hub.permissions import Action
from profilerhub_hub.rule_schemas import configured_rules
from profilerhub_hub.sagemaker.errors import validation
from profilerhub_hub.sagemaker.model import epoch
from profilerhub_hub.usecases import jobs as job_cases

if TYPE_CHECKING:
    from profilerhub_analysis.series import JobSeries
    from profilerhub_hub.sagemaker.call import Call


@functools.cache
def profiler_rules() -> frozenset[str]:
    """ProfilerReport and the rules it runs (the analysis engine: imported on first use, not at start)."""
    from profilerhub_analysis.rules import profiler_report

    return frozenset({profiler_report.NAME, *(spec.name for spec in profiler_report.MEMBERS)})


RULE_IMAGE = "profilerhub-rules"  # RuleEvaluatorImage: the rules run in the hub's workers
TRAINING_IMAGE = "profilerhub-sdk"  # AlgorithmSpecification.TrainingImage: the user's own script
LOGGED_METRIC_REGEX = "ph.log_metric"  # MetricDefinitions.Regex of a metric logged, not printed
_SORTS = {"Name": Job.name, "CreationTime": Job.created_at, "Status": Job.status}
_STOPPED_BY_USER = sa.func.coalesce(Job.stop_request["by"].as_string(), "") == "user"
_STATUS_FILTERS: dict[str, Any] = {
    "InProgress": sa.and_(Job.status.in_([JobStatus.InProgress, JobStatus.Processing]), ~_STOPPED_BY_USER),
    "Completed": sa.and_(Job.status == JobStatus.Ready, ~_STOPPED_BY_USER),
    "Failed": sa.and_(Job.status == JobStatus.Failed, ~_STOPPED_BY_USER),
    "Stopping": sa.and_(Job.status.in_([JobStatus.InProgress, JobStatus.Processing]), _STOPPED_BY_USER),
    "Stopped": sa.and_(Job.status.in_([JobStatus.Ready, JobStatus.Failed]), _STOPPED_BY_USER),
}


def statuses(job: Job) -> tuple[str, str]:
    """``(TrainingJobStatus, SecondaryStatus)`` of a job (the module's table)."""
    final = job.status in (JobStatus.Ready, JobStatus.Failed)
    if jobs.stopped_by_user(job):
        return ("Stopped", "Stopped") if final else ("Stopping", "Stopping")
    if job.status is JobStatus.Ready:
        return "Completed", "Completed"
    if job.status is JobStatus.Failed:
        return "Failed", "Failed"
    return "InProgress", "Training" if job_control.is_running(job) else "Uploading"


def _arn(call: Call, job: Job) -> str:
    return call.arns.training_job(job.id)


def _summary(call: Call, job: Job) -> dict[str, Any]:
    status, secondary = statuses(job)
    answer = {
        "TrainingJobName": job.name,
        "TrainingJobArn": _arn(call, job),
        "CreationTime": epoch(job.created_at),
        "TrainingEndTime": epoch(job.completed_at),
        "LastModifiedTime": epoch(job.updated_at),
        "TrainingJobStatus": status,
        "SecondaryStatus": secondary,
    }
    return {k: v for k, v in answer.items() if v is not None}


def list_training_jobs(call: Call) -> dict[str, Any]:
    """The jobs the caller may see, newest first unless sorted; every filter of the model but
    ``WarmPoolStatusEquals`` and ``TrainingPlanArnEquals`` (no job has either: an empty list)."""
    p = call.params
    call.allowed(call.own_target(), Action.ListJobs)
    stmt = job_control.visible_jobs(call.caller)
    if p.get("WarmPoolStatusEquals") or p.get("TrainingPlanArnEquals"):
        stmt = stmt.where(sa.false())
    if p.get("NameContains"):
        stmt = stmt.where(Job.name.ilike(f"%{p['NameContains']}%"))
    if p.get("StatusEquals"):
        stmt = stmt.where(_STATUS_FILTERS.get(p["StatusEquals"], sa.false()))
    for member, column, after in (
        ("CreationTimeAfter", Job.created_at, True),
        ("CreationTimeBefore", Job.created_at, False),
        ("LastModifiedTimeAfter", Job.updated_at, True),
        ("LastModifiedTimeBefore", Job.updated_at, False),
    ):
        if member in p:
            at = _timestamp(p[member], member)
            stmt = stmt.where(column > at if after else column < at)
    sort = p.get("SortBy", "CreationTime")
    filters = sorted((k, str(v)) for k, v in p.items() if k not in ("NextToken", "MaxResults"))
    scope = f"training-jobs:{call.caller.user_id}:{filters}"  # a token pages the same listing only
    rows, token = call.page(stmt, [_SORTS[sort], Job.id], scope)
    answer: dict[str, Any] = {"TrainingJobSummaries": [_summary(call, job) for job in rows]}
    if token:
        answer["NextToken"] = token
    return answer


def _timestamp(value: Any, member: str) -> datetime:
    try:
        if isinstance(value, int | float):
            return datetime.fromtimestamp(value, UTC)
        at = datetime.fromisoformat(str(value))
        return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        raise validation(f"{member} must be a timestamp") from None


def describe_training_job(call: Call) -> dict[str, Any]:
    job = _found(call, Action.ReadJob)[0]
    series = job_control.job_series(call.door.open_store(), job)
    status, secondary = statuses(job)
    s3 = f"s3://profilerhub/{job.domain_id}/{job.user_id}/jobs/{job.id}/"
    rules = configured_rules(call.session, job)
    answer: dict[str, Any] = {
        "TrainingJobName": job.name,
        "TrainingJobArn": _arn(call, job),
        "ModelArtifacts": {"S3ModelArtifacts": s3 + "processed/"},
        "TrainingJobStatus": status,
        "SecondaryStatus": secondary,
        "FailureReason": (job.failure_reason or "")[:1024] or None,
        "AlgorithmSpecification": {
            "TrainingImage": TRAINING_IMAGE,
            "TrainingInputMode": "File",
            "MetricDefinitions": metric_definitions(job, series),
            "EnableSageMakerMetricsTimeSeries": True,
        },
        "RoleArn": f"arn:aws:iam::{call.settings.sagemaker_account_id}:role/profilerhub",
        "OutputDataConfig": {"S3OutputPath": s3 + "raw/"},
        "ResourceConfig": {"InstanceCount": max(job.ranks or 1, 1), "VolumeSizeInGB": 0},
        "StoppingCondition": {},
        "CreationTime": epoch(job.created_at),
        "TrainingStartTime": epoch(job.created_at),
        "TrainingEndTime": epoch(job.completed_at),
        "LastModifiedTime": epoch(job.updated_at),
        "SecondaryStatusTransitions": _transitions(call, job, secondary),
        "FinalMetricDataList": final_metrics(series),
        "TrainingTimeInSeconds": _training_seconds(job),
        "ProfilerConfig": _profiler_config(job, s3),
        "ProfilingStatus": "Enabled",
        **_rule_members(job, rules),
    }
    return {k: v for k, v in answer.items() if v is not None and v != []}


def _profiler_config(job: Job, s3: str) -> dict[str, Any]:
    """The job's raw folder, and the newest capture asked of it as a ``DetailedProfilingConfig``."""
    config: dict[str, Any] = {"S3OutputPath": s3 + "raw/"}
    if job.captures:
        newest = job.captures[-1]
        detailed = {"NumSteps": newest["steps"], "RecordShapes": bool(newest.get("record_shapes"))}
        if newest.get("start_step") is not None:
            detailed["StartStep"] = newest["start_step"]
        config["ProfilingParameters"] = {_DETAILED: orjson.dumps(detailed).decode()}
    return config


def _found(call: Call, action: Action) -> tuple[Job, Any]:
    job = job_control.find_job(call.session, call.caller, call.params["TrainingJobName"])
    domain, user = job_control.owner_of(call.session, job)
    target = call.allowed(job_control.job_target(call.caller, domain, user), action)
    return job, target


def metric_definitions(job: Job, series: JobSeries) -> list[dict[str, str]]:
    """The job's own definitions, then every other training metric it has (logged by
    ``ph.log_metric``: ``Regex`` is the placeholder ``ph.log_metric``), at most the model's 40."""
    out = [{"Name": d["Name"], "Regex": d["Regex"]} for d in job.metric_definitions or []]
    named = {d["Name"] for d in out}
    names = list(series.metrics) + list((job.summary or {}).get("metrics") or {})
    for name in dict.fromkeys(names):
        if name not in named:
            out.append({"Name": name[:255], "Regex": LOGGED_METRIC_REGEX})
    return out[:40]


def final_metrics(series: JobSeries) -> list[dict[str, Any]]:
    """Each training metric's last finite value and its time (CloudWatch's final values)."""
    from profilerhub_analysis.metrics_api import final_values

    training = set(series.metrics)
    return [
        {"MetricName": v["MetricName"][:255], "Value": v["Value"], "Timestamp": v["Timestamp_ns"] / 1e9}
        for v in final_values(series)
        if v["MetricName"] in training
    ]


def _training_seconds(job: Job) -> int | None:
    """The run's seconds, rounded up (the model's minimum is 1)."""
    if job.duration_s is not None:
        seconds = job.duration_s
    elif job.completed_at is not None:
        seconds = (job.completed_at - job.created_at).total_seconds()
    else:
        return None
    return max(math.ceil(seconds), 1)


_MOVES = {
    "JobProcessing": ("Uploading", "Reading the run's files and traces"),
    "JobReady": ("Completed", "Ingested: summary, timeline and rules ready"),
    "JobFailed": ("Failed", None),
    "JobInProgress": ("Uploading", "Files the run could not deliver arrived: ingesting again"),
}


def _transitions(call: Call, job: Job, secondary: str) -> list[dict[str, Any]]:
    """Training from the job's creation; each state change the audit log has for it after;
    Stopping when a person asked; the last one open unless final."""
    moves: list[tuple[str, datetime, str | None]] = [("Training", job.created_at, "Training in progress")]
    stop = job.stop_request or {}
    if jobs.stopped_by_user(job) and stop.get("requested_at"):
        asked = datetime.fromisoformat(stop["requested_at"])
        moves.append(("Stopping", asked, f"Stop requested by {stop.get('actor', 'a user')}"))
    events = call.session.execute(
        sa.select(AuditEvent.action, AuditEvent.at, AuditEvent.detail)
        .where(AuditEvent.target_type == "Job", AuditEvent.target == job.id, AuditEvent.action.in_(_MOVES))
        .order_by(AuditEvent.id)
    ).all()
    for action, at, detail in events:
        status, message = _MOVES[action]
        moves.append((status, at, message or (detail or {}).get("reason")))
    if secondary == "Stopped":
        moves = [(("Stopped" if s == "Completed" else s), at, m) for s, at, m in moves]
    moves.sort(key=lambda move: move[1])
    out: list[dict[str, Any]] = []
    for i, (status, at, message) in enumerate(moves):
        entry: dict[str, Any] = {"Status": status, "StartTime": epoch(at)}
        if i + 1 < len(moves):
            entry["EndTime"] = epoch(moves[i + 1][1])
        elif status in ("Completed", "Failed", "Stopped"):
            entry["EndTime"] = epoch(at)
        if message:
            entry["StatusMessage"] = str(message)[:1024]
        out.append(entry)
    return out


def _rule_members(job: Job, rules: list[dict[str, Any]]) -> dict[str, Any]:
    """``ProfilerRuleConfigurations`` / ``…EvaluationStatuses`` and the ``Debug…`` pair: the
    job's rules (its own, else its domain's, else ProfilerReport) with their latest results."""
    results = {r.get("rule"): r for r in (job.rule_results or {}).get("rules") or []}
    evaluated = (job.rule_results or {}).get("evaluated_at")
    out: dict[str, list[dict[str, Any]]] = {}
    for config in rules:
        name = config["rule"]
        kind = "Profiler" if name in profiler_rules() else "Debug"
        params = {"rule_to_invoke": name} | {
            str(k)[:256]: str(v)[:256] for k, v in (config.get("parameters") or {}).items()
        }
        out.setdefault(f"{kind}RuleConfigurations", []).append(
            {"RuleConfigurationName": name, "RuleEvaluatorImage": RULE_IMAGE, "RuleParameters": params}
        )
        result = results.get(name) or {}
        status = result.get("status") or "InProgress"
        entry: dict[str, Any] = {"RuleConfigurationName": name, "RuleEvaluationStatus": status}
        details = result.get("reason") or ("not evaluated yet" if not result else None)
        if details:
            entry["StatusDetails"] = str(details)[:1024]
        if evaluated:
            entry["LastModifiedTime"] = datetime.fromisoformat(evaluated).timestamp()
        out.setdefault(f"{kind}RuleEvaluationStatuses", []).append(entry)
    return out


def stop_training_job(call: Call) -> dict[str, Any]:
    """Ask the run to stop: the use case REST's ``POST …/stop`` calls (``usecases.jobs.stop_job``)."""
    job, target = _found(call, Action.StopJob)
    job_cases.stop_job(call.door, target, job)
    return {}


_DETAILED = "DetailedProfilingConfig"
_DETAILED_KEYS = {"StartStep", "NumSteps", "RecordShapes"}


def _capture_of(config: dict[str, Any]) -> tuple[int, int | None, bool] | None:
    """``ProfilerConfig``'s ``DetailedProfilingConfig`` as (steps, start step, record shapes);
    None when it asks for none. What ProfilerHub cannot do is a ``ValidationException``."""
    params = config.get("ProfilingParameters") or {}
    if (
        config.get("DisableProfiler")
        or config.get("S3OutputPath")
        or config.get("ProfilingIntervalInMilliseconds")
    ):
        raise validation(
            "ProfilerHub's UpdateTrainingJob takes ProfilingParameters.DetailedProfilingConfig only "
            "(system metrics are sampled by the SDK at ph.init's sample_interval_s, output goes to the hub)"
        )
    other = sorted(set(params) - {_DETAILED})
    if other:
        raise validation(f"ProfilingParameters {', '.join(other)} are not supported; give {_DETAILED}")
    if _DETAILED not in params:
        return None
    try:
        detailed = orjson.loads(params[_DETAILED])
    except orjson.JSONDecodeError:
        raise validation(f'{_DETAILED} must be JSON, like \'{{"StartStep": 5, "NumSteps": 3}}\'') from None
    if not isinstance(detailed, dict) or set(detailed) - _DETAILED_KEYS:
        raise validation(
            f"{_DETAILED} takes {', '.join(sorted(_DETAILED_KEYS))} (a time window, "
            "StartTimeInSecSinceEpoch/DurationInSeconds, is not supported: steps are)"
        )
    steps, start = detailed.get("NumSteps", 1), detailed.get("StartStep")
    if not isinstance(steps, int) or (start is not None and not isinstance(start, int)):
        raise validation(f"{_DETAILED}'s NumSteps and StartStep must be integers")
    return steps, start, bool(detailed.get("RecordShapes", False))


def _parameter(text: str) -> Any:
    """A ``RuleParameters`` value (always a string on SageMaker) as the number or flag it spells."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _rules_of(configurations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``ProfilerRuleConfigurations`` as the job's rules: ``RuleParameters.rule_to_invoke`` (else
    ``RuleConfigurationName``) names the rule, the other parameters are its own (numbers and
    ``true``/``false`` read as such)."""
    wanted = []
    for c in configurations:
        params = dict(c.get("RuleParameters") or {})
        name = params.pop("rule_to_invoke", c["RuleConfigurationName"])
        wanted.append({"rule": name, "parameters": {k: _parameter(v) for k, v in params.items()}})
    from profilerhub_analysis.rules.registry import RuleParamError, check_configs  # numpy: not at start

    try:
        return check_configs(wanted)
    except RuleParamError as exc:
        raise validation(str(exc)) from None


def update_training_job(call: Call) -> dict[str, Any]:
    """``ProfilerConfig`` with a ``DetailedProfilingConfig``: a capture (``usecases.jobs.capture_job``,
    what ``POST …/captures`` calls); ``ProfilerRuleConfigurations``: the job's rules from now on."""
    p = call.params
    if p.get("ResourceConfig") or p.get("RemoteDebugConfig"):
        raise validation("ResourceConfig and RemoteDebugConfig mean nothing to ProfilerHub")
    job, target = _found(call, Action.UpdateJob)
    capture = _capture_of(p["ProfilerConfig"]) if "ProfilerConfig" in p else None
    rules = _rules_of(p["ProfilerRuleConfigurations"]) if p.get("ProfilerRuleConfigurations") else None
    if capture is None and rules is None:
        raise validation(
            "Give ProfilerConfig.ProfilingParameters.DetailedProfilingConfig or ProfilerRuleConfigurations"
        )
    if rules is not None:
        if not job_control.is_running(job):
            raise Conflict(f"Job '{job.id}' is not running; its rules are those it ran with")
        job_cases.update_rules(call.door, target, job, rules)
    if capture is not None:
        job_cases.capture_job(call.door, target, job, *capture)
    return {"TrainingJobArn": _arn(call, job)}


__all__ = [
    "profiler_rules",
    "describe_training_job",
    "final_metrics",
    "list_training_jobs",
    "metric_definitions",
    "statuses",
    "stop_training_job",
    "update_training_job",
]
