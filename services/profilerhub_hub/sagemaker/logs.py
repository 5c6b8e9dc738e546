"""CloudWatch Logs over ``/logs``: the lines a job's script printed, as SageMaker's training-job logs.

    DescribeLogGroups    the one group, ``/aws/sagemaker/TrainingJobs``
    DescribeLogStreams   a stream per rank of each job the caller may see (``ListJobs``), named
                         ``{job}/algo-{rank+1}-{epoch of the job's creation}`` (``job_logs``)
    GetLogEvents         one stream's lines (``ReadJob``), forward and backward tokens
    FilterLogEvents      the lines of the named streams (or of the caller's newest jobs) that
                         hold every term of a plain filter pattern

A stream's ``{job}`` is the job's name, or its id; with the creation epoch it names one run even
where many share a name. Empty lines are left out (an event's message is never empty on AWS).
Timestamps are milliseconds since the epoch; ``ingestionTime`` is when the line was printed too.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from profilerhub_core.db.models import Job
from profilerhub_core.errors import NotFound
from profilerhub_core.pagination import decode_page_token, encode_page_token
from profilerhub_hub import job_control, job_logs
from profilerhub_hub.permissions import Action
from profilerhub_hub.sagemaker.errors import AwsError

if TYPE_CHECKING:
    from profilerhub_hub.sagemaker.call import Call

PREFIX = "/logs"
GROUP = "/aws/sagemaker/TrainingJobs"
MAX_EVENTS = 10_000
STREAMS_PER_PAGE = 50
FILTERED_JOBS = 50  # FilterLogEvents without stream names searches the caller's newest jobs
_TERM = re.compile(r'"([^"]*)"|(\S+)')


def _missing(what: str) -> AwsError:
    return AwsError("ResourceNotFoundException", f"The specified log {what} does not exist.")


def _invalid(message: str) -> AwsError:
    return AwsError("InvalidParameterException", message)


def _group(call: Call) -> None:
    name = call.params.get("logGroupName") or call.params.get("logGroupIdentifier")
    if name is None:
        raise _invalid("Give logGroupName (or logGroupIdentifier)")
    if name.rsplit(":log-group:", 1)[-1].removesuffix(":*") != GROUP:
        raise _missing("group")


def _ms(ns: int) -> int:
    return ns // 1_000_000


def describe_log_groups(call: Call) -> dict[str, Any]:
    call.allowed(call.own_target(), Action.ListJobs)
    prefix = call.params.get("logGroupNamePrefix") or ""
    pattern = call.params.get("logGroupNamePattern") or ""
    if not GROUP.startswith(prefix) or pattern.lower() not in GROUP.lower():
        return {"logGroups": []}
    settings = call.settings
    arn = f"arn:aws:logs:{settings.sagemaker_region}:{settings.sagemaker_account_id}:log-group:{GROUP}"
    return {"logGroups": [{"logGroupName": GROUP, "creationTime": 0, "arn": arn + ":*", "logGroupArn": arn}]}


class _Reader:
    def __init__(self, call: Call) -> None:
        self.call = call
        self.store = call.door.open_store()

    def stream(self, name: str) -> tuple[Job, list[str]]:
        """The job and chunk keys of the stream ``name`` (``ResourceNotFoundException`` alike for a
        missing and a hidden one)."""
        ref = job_logs.parse_stream(name)
        if ref is None:
            raise _missing("stream")
        call = self.call
        try:
            job = self._job(ref)
            domain, user = job_control.owner_of(call.session, job)
            call.allowed(job_control.job_target(call.caller, domain, user), Action.ReadJob)
        except NotFound:
            raise _missing("stream") from None
        keys = job_logs.ranks(self.store, job).get(ref.rank)
        if keys is None:
            raise _missing("stream")
        return job, keys

    def _job(self, ref: job_logs.StreamRef) -> Job:
        """The job of that name (or id) created at that second, among those the caller sees."""
        visible = job_control.visible_jobs(self.call.caller)
        for job in self.call.session.scalars(
            visible.where(sa.or_(Job.id == ref.job, Job.name == ref.job)).order_by(Job.created_at.desc())
        ):
            if int(job.created_at.timestamp()) == ref.epoch:
                return job
        raise NotFound("no such stream")

    def events(self, keys: list[str], start_ms: int | None, end_ms: int | None) -> list[job_logs.LogRecord]:
        out = []
        for record in job_logs.events(self.store, keys):
            at = _ms(record.ts_ns)
            if record.message and (start_ms is None or at >= start_ms) and (end_ms is None or at < end_ms):
                out.append(record)
        return out


def describe_log_streams(call: Call) -> dict[str, Any]:
    """The streams of the caller's jobs, ``limit`` (at most 50) a page, newest job first (also for
    ``orderBy`` ``LastEventTime``: a job's last line comes after the jobs before it)."""
    _group(call)
    p = call.params
    call.allowed(call.own_target(), Action.ListJobs)
    prefix = p.get("logStreamNamePrefix") or ""
    if prefix and p.get("orderBy") == "LastEventTime":
        raise _invalid("Cannot order by LastEventTime with a logStreamNamePrefix.")
    stmt = job_control.visible_jobs(call.caller)
    head = prefix.split("/", 1)[0]
    if head:
        like = head.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        stmt = stmt.where(Job.name.like(like + ("%" if "/" not in prefix else ""), escape="\\"))
    limit = p.get("limit") or STREAMS_PER_PAGE
    paged = call.with_params(MaxResults=limit, NextToken=p.get("nextToken"))
    rows, token = paged.page(stmt, [Job.created_at, Job.id], f"log-streams:{prefix}", descending=True)
    reader, streams = _Reader(call), []
    for job in rows:
        for rank, keys in job_logs.ranks(reader.store, job).items():
            name = job_logs.stream_name(job, rank)
            if not name.startswith(prefix):
                continue
            lines = reader.events(keys, None, None)
            created = int(job.created_at.timestamp() * 1000)
            stream: dict[str, Any] = {"logStreamName": name, "creationTime": created, "storedBytes": 0}
            if lines:
                first, last = _ms(lines[0].ts_ns), _ms(lines[-1].ts_ns)
                stream |= {
                    "firstEventTimestamp": first,
                    "lastEventTimestamp": last,
                    "lastIngestionTime": last,
                }
            streams.append(stream)
    if p.get("descending") is False and p.get("orderBy") == "LastEventTime":
        streams.reverse()
    answer: dict[str, Any] = {"logStreams": streams}
    if token:
        answer["nextToken"] = token
    return answer


def _event(record: job_logs.LogRecord) -> dict[str, Any]:
    at = _ms(record.ts_ns)
    return {"timestamp": at, "message": record.message, "ingestionTime": at}


def get_log_events(call: Call) -> dict[str, Any]:
    """Tokens are ``f/{i}`` (from the ``i``-th event on) and ``b/{i}`` (the events before it),
    over the events between ``startTime`` and ``endTime``; without one, ``startFromHead`` starts at
    the first event, else the answer is the last ``limit`` events (AWS's default)."""
    _group(call)
    p = call.params
    reader = _Reader(call)
    _, keys = reader.stream(p["logStreamName"])
    found = reader.events(keys, p.get("startTime"), p.get("endTime"))
    limit = p.get("limit") or MAX_EVENTS
    token = p.get("nextToken")
    if token:
        match = re.fullmatch(r"([fb])/([0-9]{1,9})", token)
        if match is None:
            raise _invalid("The specified nextToken is invalid.")
        at = min(int(match[2]), len(found))
        start, end = (at, min(at + limit, len(found))) if match[1] == "f" else (max(at - limit, 0), at)
    elif p.get("startFromHead"):
        start, end = 0, min(limit, len(found))
    else:
        start, end = max(len(found) - limit, 0), len(found)
    return {
        "events": [_event(r) for r in found[start:end]],
        "nextForwardToken": f"f/{end}",
        "nextBackwardToken": f"b/{start}",
    }


def _terms(pattern: str) -> list[str]:
    """A plain filter pattern's terms (quoted phrases kept whole); ``InvalidParameterException``
    for the other pattern syntaxes (JSON ``{…}``, space-delimited ``[…]``, ``?`` alternatives,
    ``-`` exclusions, regular expressions ``%…%``)."""
    stripped = pattern.strip()
    if stripped[:1] in ("{", "[", "%") or any(t.startswith(("?", "-")) for t in stripped.split()):
        raise _invalid(
            "ProfilerHub's FilterLogEvents takes plain terms and quoted phrases only (every one must "
            "appear in the line); JSON, space-delimited, OR, exclusion and regex patterns are not supported"
        )
    return [quoted or bare for quoted, bare in _TERM.findall(stripped)]


def filter_log_events(call: Call) -> dict[str, Any]:
    """Lines holding every term, by time, ``limit`` a page (``nextToken``: signed offset)."""
    _group(call)
    p = call.params
    terms = _terms(p.get("filterPattern") or "")
    reader = _Reader(call)
    names: list[str] = list(p.get("logStreamNames") or [])
    if names and p.get("logStreamNamePrefix"):
        raise _invalid("logStreamNames and logStreamNamePrefix cannot both be given")
    if not names:
        listed = describe_log_streams(call.with_params(limit=FILTERED_JOBS, nextToken=None))
        names = [s["logStreamName"] for s in listed["logStreams"]]
    matched: list[tuple[int, str, job_logs.LogRecord]] = []
    searched = []
    for name in dict.fromkeys(names):
        try:
            _, keys = reader.stream(name)
        except AwsError:
            continue  # a named stream that does not exist is skipped, as on AWS
        searched.append({"logStreamName": name, "searchedCompletely": True})
        for i, record in enumerate(reader.events(keys, p.get("startTime"), p.get("endTime"))):
            if all(term in record.message for term in terms):
                matched.append((record.ts_ns, f"{name}#{i}", record))
    matched.sort(key=lambda m: (m[0], m[1]))
    key, scope = call.settings.signing_key(), f"filter-log-events:{sorted(names)}:{terms}"
    offset = int(decode_page_token(key, scope, p["nextToken"])[0]) if p.get("nextToken") else 0
    limit = p.get("limit") or MAX_EVENTS
    page = matched[offset : offset + limit]
    answer: dict[str, Any] = {
        "events": [
            {"logStreamName": name.rsplit("#", 1)[0], "eventId": name, **_event(r)} for _, name, r in page
        ],
        "searchedLogStreams": searched,
    }
    if offset + limit < len(matched):
        answer["nextToken"] = encode_page_token(key, scope, [offset + limit])
    return answer


OPERATIONS = {
    "DescribeLogGroups": describe_log_groups,
    "DescribeLogStreams": describe_log_streams,
    "GetLogEvents": get_log_events,
    "FilterLogEvents": filter_log_events,
}

__all__ = ["GROUP", "OPERATIONS", "PREFIX"]
