"""``profilerhub jobs …``: a user's profiled runs (list, describe, delete).

Jobs are made by the SDK in a training script, or by ``profilerhub upload`` from a folder of
traces; these commands read and delete them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from profilerhub.cli.hubapi import CliFailure, Hub, confirm, path, run
from profilerhub.cli.output import Column, Output, OutputOption, details, emit
from profilerhub.cli.resources import (
    DomainOption,
    LimitOption,
    UserOption,
    YesOption,
    app_group,
    show_list,
    where,
)


def ingested(progress: dict[str, int]) -> str:
    """``3 of 8 traces (120.0 MB of 400.0 MB)``: a Processing job's ``progress``, in words."""
    from rich.filesize import decimal

    text = f"{progress.get('traces_done', 0)} of {progress.get('traces', 0)} traces"
    if "bytes" in progress:
        text += f" ({decimal(progress.get('bytes_done', 0))} of {decimal(progress['bytes'])})"
    return text


jobs_app = app_group(
    "jobs", "Profiled runs of a user: list, describe and delete them (the SDK and `upload` make them)."
)


class JobStatus(StrEnum):
    InProgress = "InProgress"
    Processing = "Processing"
    Ready = "Ready"
    Failed = "Failed"


JobArgument = Annotated[str, typer.Argument(metavar="JOB_ID", help="As `profilerhub jobs list` shows it.")]

JOB_COLUMNS = [
    Column("job id", "job_id", width=12, fold=True),
    Column("name", "name", width=12, fold=True),
    Column("status", "status", width=10),
    Column("created", "created_at", width=16, priority=1),
    Column("completed", "completed_at", width=16, priority=3),
    Column("reason", "failure_reason", width=12, fold=True, priority=2),
]
JOB_FIELDS = [
    ("job", "name"),
    ("job id", "job_id"),
    ("user", "user"),
    ("domain", "domain"),
    ("status", "status"),
    ("waiting", "status_reason"),
    ("ingested", "ingested"),
    ("failure reason", "failure_reason"),
    ("warnings", "warnings"),
    ("created", "created_at"),
    ("completed", "completed_at"),
    ("updated", "updated_at"),
    ("open in the app", "app_url"),
]


def app_job_url(hub: Hub, domain: str, user: str, job_id: str) -> str | None:
    """Where the job opens in the user's running profiler app (None: no app is InService)."""
    try:
        apps = hub.get(path("domains", domain, "users", user, "apps"), status="InService", limit=50)
    except CliFailure:  # may read the job but not list the apps: say nothing
        return None
    for app in apps.get("items") or []:
        if app.get("app_type") == "DetailedProfiler":
            return f"{hub.url}{app['url']}jobs/{job_id}"
    return None


@jobs_app.command("list")
def list_jobs(
    ctx: typer.Context,
    domain: DomainOption = None,
    user: UserOption = None,
    status: Annotated[
        JobStatus | None, typer.Option(help="Only jobs in this status.", show_default="any")
    ] = None,
    output: OutputOption = Output.table,
    limit: LimitOption = None,
) -> None:
    """A user's jobs, newest first (yours by default)."""

    def work(hub: Hub) -> None:
        d, u = where(hub, domain, user)
        url = path("domains", d, "users", u, "jobs")
        state = status.value if status else None
        show_list(
            hub, url, JOB_COLUMNS, output, limit, title=f"Jobs of {d}/{u}", empty="no jobs", status=state
        )

    run(ctx, work)


@jobs_app.command("describe")
def describe_job(
    ctx: typer.Context,
    job_id: JobArgument,
    domain: DomainOption = None,
    user: UserOption = None,
    output: OutputOption = Output.table,
) -> None:
    """One job: its status, why it failed, and where to open it."""

    def work(hub: Hub) -> None:
        d, u = where(hub, domain, user)
        job: dict[str, Any] = hub.get(path("domains", d, "users", u, "jobs", job_id))
        if output is Output.table:
            progress = job.get("progress") or {}
            job = {
                **job,
                "ingested": ingested(progress) if progress else None,
                "app_url": app_job_url(hub, d, u, job_id) or "start the app: profilerhub apps start",
            }
        emit(job, output, lambda: details(job, JOB_FIELDS, title=f"Job {job['name']}"))

    run(ctx, work)


@jobs_app.command("delete")
def delete_job(
    ctx: typer.Context,
    job_id: JobArgument,
    domain: DomainOption = None,
    user: UserOption = None,
    yes: YesOption = False,
) -> None:
    """Delete a job and every file it has in storage."""

    def work(hub: Hub) -> None:
        d, u = where(hub, domain, user)
        confirm(f"job {job_id} of {d}/{u} and its files", yes)
        hub.request("DELETE", path("domains", d, "users", u, "jobs", job_id))
        typer.echo(f"deleted job {job_id} of {d}/{u}")

    run(ctx, work)


def register(app: typer.Typer) -> None:
    app.add_typer(jobs_app)
