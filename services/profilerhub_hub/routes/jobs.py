"""Jobs: ``/domains/{domain}/users/{user}/jobs[/{job_id}[/files/{path}|/uploads|/complete]]``.

The SDK's upload protocol (``docs/jobs.md``): create the job, upload raw files (through the hub,
or to presigned URLs on S3), complete it; the hub then sends the ingest task, after the commit.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import Query, Request, Response
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from profilerhub_core.db.models import Job, JobStatus
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.records import jobs
from profilerhub_core.records.ingest_queue import FairShare, status_reason
from profilerhub_core.storage import layout
from profilerhub_core.tasks import INGEST_CAPTURES
from profilerhub_hub import job_logs, job_outputs, job_uploads
from profilerhub_hub import job_tensors as job_tensors_out
from profilerhub_hub.deps import PageDep, Resolved, SessionDep, SettingsDep, allow
from profilerhub_hub.deps.door import DoorDep
from profilerhub_hub.job_schemas import (
    FileStored,
    JobCapture,
    JobCaptureCreate,
    JobComplete,
    JobCreate,
    JobLog,
    JobRead,
    UploadGrant,
    UploadGrantCreate,
)
from profilerhub_hub.permissions import Action
from profilerhub_hub.routes.paths import API_PREFIX, OF_USER, ONE_JOB, USER_JOBS, api_router
from profilerhub_hub.rule_schemas import RulesRead, configured_rules, rules_read
from profilerhub_hub.schemas import Page
from profilerhub_hub.services import services
from profilerhub_hub.usecases import jobs as job_cases

log = logging.getLogger("profilerhub.hub")

router = api_router(tags=["jobs"])

StatusFilter = Annotated[JobStatus | None, Query(description="Only jobs in this status.")]


def _place(target: Resolved, job_id: str) -> JobPlace:
    assert target.domain is not None and target.user is not None
    return JobPlace(target.domain.id, target.user.id, job_id)


def _job(session: Session, target: Resolved, job_id: str) -> Job:
    assert target.user is not None
    return jobs.require_job(session, target.user, job_id)


def _read(
    request: Request, target: Resolved, job: Job, *, summary: bool = False, session: Session | None = None
) -> JobRead:
    """The job as the API shows it; with ``session``, where it stands in the ingest queue too."""
    assert target.domain is not None and target.user is not None
    domain, user = target.domain.name, target.user.name
    upload = None
    if jobs.takes_files(job):
        url = API_PREFIX + ONE_JOB.format(domain=domain, user=user, job_id=job.id)
        store = services(request).storage
        upload = job_uploads.upload_info(services(request).settings, store, url)
    progress = job_outputs.ingest_progress(services(request).storage, job) if summary else None
    share = FairShare.of(services(request).settings)
    reason = status_reason(session, job, share, progress) if session is not None else None
    return JobRead.of(
        job, domain, user, upload=upload, summary=summary, progress=progress, status_reason=reason
    )


@router.post(USER_JOBS, status_code=201, openapi_extra=OF_USER)
def create_job(
    body: JobCreate, request: Request, door: DoorDep, target: Annotated[Resolved, allow(Action.CreateJob)]
) -> JobRead:
    definitions = [d.model_dump() for d in body.metric_definitions]
    rules = [r for r in body.rules or [] if isinstance(r, dict)] or None  # normalised: dicts only
    job = job_cases.create_job(door, target, body.name, definitions, rules, body.stop_on)
    return _read(request, target, job)


@router.get(USER_JOBS, openapi_extra=OF_USER)
def list_jobs(
    session: SessionDep,
    page: PageDep,
    request: Request,
    target: Annotated[Resolved, allow(Action.ListJobs)],
    status: StatusFilter = None,
) -> Page[JobRead]:
    """The user's jobs, newest first."""
    assert target.user is not None
    stmt = jobs.jobs_query(target.user, status)
    scope = f"jobs:{target.user.id}:{status or ''}"
    return page.fetch(
        session,
        stmt,
        [Job.created_at, Job.id],
        lambda job: _read(request, target, job, session=session),
        scope=scope,
        descending=True,
    )


@router.get(ONE_JOB, openapi_extra=OF_USER)
def describe_job(
    job_id: str, request: Request, session: SessionDep, target: Annotated[Resolved, allow(Action.ReadJob)]
) -> JobRead:
    return _read(request, target, _job(session, target, job_id), summary=True, session=session)


@router.get(ONE_JOB + "/rules", openapi_extra=OF_USER)
def job_rules(
    job_id: str, session: SessionDep, target: Annotated[Resolved, allow(Action.ReadJob)]
) -> RulesRead:
    """Each configured rule's status, reason, parameters and findings (live while the job runs)."""
    job = _job(session, target, job_id)
    return rules_read(job.id, configured_rules(session, job), job.rule_results)


NOT_READY: dict[int | str, dict[str, Any]] = {409: {"description": "The job is not Ready yet"}}


@router.get(ONE_JOB + "/report", openapi_extra=OF_USER, response_class=HTMLResponse, responses=NOT_READY)
def job_report(
    job_id: str, request: Request, session: SessionDep, target: Annotated[Resolved, allow(Action.ReadJob)]
) -> HTMLResponse:
    """The job's profiling report: one self-contained HTML page (inline SVG, no script)."""
    job = _job(session, target, job_id)
    html = job_outputs.report(services(request).storage, _place(target, job_id), job)
    headers = {
        "Content-Disposition": f'inline; filename="profiling-report-{job.name}.html"',
        "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
    }
    return HTMLResponse(html, headers=headers)


@router.get(ONE_JOB + "/metrics", openapi_extra=OF_USER, responses=NOT_READY)
def job_metrics(
    job_id: str,
    request: Request,
    session: SessionDep,
    target: Annotated[Resolved, allow(Action.ReadJob)],
    name: Annotated[str | None, Query(max_length=300, description="A metric; without it, the list.")] = None,
    stat: Annotated[
        str, Query(description="Average, Minimum, Maximum, Sum, SampleCount, p50, p90, p99")
    ] = "Average",
    period: Annotated[float, Query(description="Seconds per datapoint, 0.1 .. 3600.")] = 60.0,
    start: Annotated[int | None, Query(description="From (epoch ns, inclusive).")] = None,
    end: Annotated[int | None, Query(description="To (epoch ns, exclusive).")] = None,
) -> dict[str, Any]:
    """The job's metric names and final values, or one metric's datapoints (CloudWatch-style)."""
    job = _job(session, target, job_id)
    store = services(request).storage
    return job_outputs.metrics(store, _place(target, job_id), job, name, stat, period, start, end)


@router.get(ONE_JOB + "/logs", openapi_extra=OF_USER)
def job_log(
    job_id: str,
    request: Request,
    session: SessionDep,
    target: Annotated[Resolved, allow(Action.ReadJob)],
    rank: Annotated[int | None, Query(ge=0, description="The rank's log; default the first.")] = None,
    offset: Annotated[int, Query(ge=0, description="Lines to skip (a previous answer's next_offset).")] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000, description="Lines at most.")] = 1000,
) -> JobLog:
    """The lines the job's script printed (stdout and stderr, in order), while it runs and after."""
    job = _job(session, target, job_id)
    session.close()  # no connection held while storage is read
    return job_logs.page(services(request).storage, job, rank, offset, limit)


TensorFormat = Annotated[
    str,
    Query(pattern="^(json|npz)$", description="json: the listing; npz: the whole table (the trial's form)."),
]


@router.get(ONE_JOB + "/tensors", openapi_extra=OF_USER, response_model=None)
def job_tensors(
    job_id: str,
    request: Request,
    session: SessionDep,
    target: Annotated[Resolved, allow(Action.ReadJob)],
    format: TensorFormat = "json",
) -> dict[str, Any] | Response:
    """The job's ``ph.watch`` tensors: names (collection, shape, module type), collections,
    modes, ranks and steps per mode; also while the job runs (``live``: from its chunks so far)."""
    job = _job(session, target, job_id)
    store, place = services(request).storage, _place(target, job_id)
    if format == "npz":
        return Response(job_tensors_out.table_bytes(store, place, job), media_type="application/octet-stream")
    return job_tensors_out.index(store, place, job)


@router.get(ONE_JOB + "/tensors/full", openapi_extra=OF_USER)
def job_full_tensors(
    job_id: str, request: Request, session: SessionDep, target: Annotated[Resolved, allow(Action.ReadJob)]
) -> dict[str, Any]:
    """The tensors saved whole (``ph.watch(full_tensors=…)``): name, mode, rank, step, path."""
    job = _job(session, target, job_id)
    return job_tensors_out.full_list(services(request).storage, _place(target, job_id), job)


@router.get(ONE_JOB + "/tensors/full/{path:path}", openapi_extra=OF_USER, response_class=Response)
def job_full_tensor(
    job_id: str,
    path: str,
    request: Request,
    session: SessionDep,
    target: Annotated[Resolved, allow(Action.ReadJob)],
) -> Response:
    """One tensor saved whole, as a ``.npy`` file (``numpy.load`` reads it)."""
    job = _job(session, target, job_id)
    store, place = services(request).storage, _place(target, job_id)
    data = job_tensors_out.full_file(store, place, job, path)
    return Response(data, media_type="application/octet-stream")


@router.get(ONE_JOB + "/tensors/{name:path}", openapi_extra=OF_USER)
def job_tensor(
    job_id: str,
    name: str,
    request: Request,
    session: SessionDep,
    target: Annotated[Resolved, allow(Action.ReadJob)],
    stat: Annotated[
        str,
        Query(
            max_length=20, description="min, max, mean, std, l1, l2, nan, inf, zero_frac, numel, dead_frac"
        ),
    ] = "l2",
    mode: Annotated[str, Query(max_length=10, description="train, eval or predict.")] = "train",
    rank: Annotated[int, Query(ge=0, le=1_000_000, description="The rank (worker).")] = 0,
    hist: Annotated[bool, Query(description="Add the histogram over the steps.")] = False,
    start: Annotated[int | None, Query(ge=0, description="From this step (inclusive).")] = None,
    end: Annotated[int | None, Query(ge=0, description="To this step (exclusive).")] = None,
) -> dict[str, Any]:
    """One tensor's statistic over the steps (and its histogram with ``hist=true``)."""
    job = _job(session, target, job_id)
    store, place = services(request).storage, _place(target, job_id)
    query = {"stat": stat, "mode": mode, "rank": rank, "hist": hist, "start": start, "end": end}
    return job_tensors_out.series(store, place, job, name, **query)


@router.post(ONE_JOB + "/stop", status_code=202, openapi_extra=OF_USER)
def stop_job(
    job_id: str, request: Request, door: DoorDep, target: Annotated[Resolved, allow(Action.StopJob)]
) -> JobRead:
    """Ask the running job's run to stop: the SDK raises ``ph.StopTraining`` at its next step
    (409 once the run is over). Asking again changes nothing."""
    return _read(request, target, job_cases.stop_job(door, target, _job(door.session, target, job_id)))


@router.post(ONE_JOB + "/captures", status_code=202, openapi_extra=OF_USER)
def capture_job(
    job_id: str,
    body: JobCaptureCreate,
    door: DoorDep,
    target: Annotated[Resolved, allow(Action.UpdateJob)],
) -> JobCapture:
    """Ask the running job's run to run the PyTorch profiler for ``steps`` steps from ``start_step``
    (else its next step); the trace arrives as one more trace of the job. 409 when the run is over,
    was not run through the SDK, has no torch, or profiles on a schedule of its own."""
    job = _job(door.session, target, job_id)
    capture = job_cases.capture_job(door, target, job, body.steps, body.start_step, body.record_shapes)
    return JobCapture(job_id=job.id, **capture)


@router.put(ONE_JOB + "/files/{path:path}", status_code=201, openapi_extra=OF_USER)
async def upload_file(
    job_id: str,
    path: str,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    response: Response,
    target: Annotated[Resolved, allow(Action.UploadJobFile)],
) -> FileStored:
    """Store the request body as the job's raw file ``path`` (streamed; replaces a file of that name)."""
    job = await run_in_threadpool(_job, session, target, job_id)
    jobs.require_uploading(job)
    response.headers.update(jobs.stop_header(job))  # how a run learns a stop was requested
    response.headers.update(jobs.capture_header(job))  # and a capture
    quota = await run_in_threadpool(job_uploads.quota_of, session, target, job)
    session.close()  # no connection held while the body streams in
    length = request.headers.get("content-length")
    size, total = await run_in_threadpool(
        job_uploads.store_upload,
        settings,
        services(request).storage,
        _place(target, job_id),
        path,
        request.stream(),
        int(length) if length and length.isdigit() else None,
        quota,
    )
    await run_in_threadpool(job_uploads.count_raw_bytes, session, job_id, total)
    if layout.capture_id(path) is not None:  # an on-demand capture's trace: ingested while it runs
        await run_in_threadpool(services(request).app_tasks.send, INGEST_CAPTURES, job_id)
    return FileStored(path=path, size=size)


@router.post(ONE_JOB + "/uploads", openapi_extra=OF_USER)
def grant_upload(
    job_id: str,
    body: UploadGrantCreate,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    response: Response,
    target: Annotated[Resolved, allow(Action.UploadJobFile)],
) -> UploadGrant:
    """A presigned URL to PUT one raw file straight to S3 (when the hub's storage is S3)."""
    job = _job(session, target, job_id)
    jobs.require_uploading(job)
    response.headers.update(jobs.stop_header(job))
    response.headers.update(jobs.capture_header(job))
    store = services(request).storage
    quota = job_uploads.quota_of(session, target, job)
    grant, total = job_uploads.grant_upload(
        settings, store, _place(target, job_id), body.path, body.size, quota
    )
    job_uploads.count_raw_bytes(session, job_id, total)
    return grant


@router.post(ONE_JOB + "/complete", status_code=202, openapi_extra=OF_USER)
def complete_job(
    job_id: str,
    request: Request,
    door: DoorDep,
    target: Annotated[Resolved, allow(Action.CompleteJob)],
    body: JobComplete | None = None,
) -> JobRead:
    """Mark the upload finished and start ingest. Repeating it is harmless (and re-sends ingest).

    The body, when the run could not deliver everything, says how many files are missing and
    where they wait; the job is ingested with what it has and shows a warning. A later
    ``complete`` reporting fewer missing (they arrived) ingests a Ready or Failed job anew."""
    job = _job(door.session, target, job_id)
    undelivered = body.undelivered() if body is not None else None
    return _read(request, target, job_cases.complete_job(door, target, job, undelivered))


@router.delete(ONE_JOB, status_code=204, openapi_extra=OF_USER)
def delete_job(job_id: str, door: DoorDep, target: Annotated[Resolved, allow(Action.DeleteJob)]) -> Response:
    """Delete the job and every object it has in storage (refused while Processing)."""
    job_cases.delete_job(door, target, _job(door.session, target, job_id))
    return Response(status_code=204)
