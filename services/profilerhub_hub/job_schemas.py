"""Request and response bodies of the job API (``JobCreate`` in, ``JobRead`` out)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

from profilerhub_core.db.models import Job, JobStatus
from profilerhub_core.names import ResourceName
from profilerhub_core.records.jobs import undelivered_warning
from profilerhub_hub.rule_schemas import RuleConfigs, StopOn

# SageMaker's limits for metric definitions.
MAX_METRIC_DEFINITIONS = 40
MAX_METRIC_NAME = 255
MAX_METRIC_REGEX = 500


class MetricDefinition(BaseModel):
    """A SageMaker-style metric read from the script's output: ``{"Name", "Regex"}``."""

    model_config = ConfigDict(extra="forbid")

    Name: str = Field(min_length=1, max_length=MAX_METRIC_NAME)
    Regex: str = Field(min_length=1, max_length=MAX_METRIC_REGEX)

    @field_validator("Regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression ({exc})") from exc
        return value


class JobCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: ResourceName
    metric_definitions: list[MetricDefinition] = Field(
        default_factory=list, max_length=MAX_METRIC_DEFINITIONS
    )
    rules: RuleConfigs | None = Field(
        None, description="Rules to run (default: the domain's, else ProfilerReport)."
    )
    stop_on: StopOn | None = Field(
        None,
        description="Rules whose IssuesFound (while the job runs) asks the run to stop: the SDK "
        "raises ph.StopTraining at its next step (docs/sdk.md).",
    )


class SpillInfo(BaseModel):
    """Where the SDK kept the files it could not deliver, and the command that delivers them."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field("", max_length=255)
    dir: str = Field("", max_length=4096)
    files: int = Field(0, ge=0, le=10_000_000)
    command: str = Field("", max_length=4096)


class JobComplete(BaseModel):
    """The optional body of ``complete``: what the run could not deliver (nothing: all arrived)."""

    model_config = ConfigDict(extra="forbid")

    missing_files: StrictInt = Field(0, ge=0, le=10_000_000, description="Files not delivered.")
    lost_files: StrictInt = Field(0, ge=0, le=10_000_000, description="Of those, kept nowhere.")
    spill: SpillInfo | None = Field(None, description="Where the rest waits to be delivered.")

    def undelivered(self) -> dict[str, Any] | None:
        """What ``Job.undelivered`` records: None when nothing is missing."""
        if not self.missing_files:
            return None
        return self.model_dump(exclude_none=True)


class UploadInfo(BaseModel):
    """Where the job's raw files go.

    ``hub``: ``PUT {files_url}/{relative_path}`` with the raw bytes. ``s3``: ``POST {uploads_url}``
    ``{"path", "size"}`` for a presigned URL, then ``PUT`` the bytes there.
    """

    mode: Literal["hub", "s3"]
    files_url: str
    uploads_url: str
    max_file_bytes: int
    max_total_bytes: int


class JobRead(BaseModel):
    job_id: str
    name: str
    domain: str
    user: str
    status: JobStatus
    failure_reason: str | None
    status_reason: str | None = Field(
        None,
        description="Where a job that is not final stands in the ingest queue, read at the moment "
        'it is asked (``records.ingest_queue``): "Waiting: 2 of your jobs are ingesting (limit 2)" for '
        "a completed job held back by its owner's fair share, that it waits for an ingest worker, or "
        "how many of a Processing job's traces wait for its per-job window; null otherwise.",
    )
    metric_definitions: list[dict[str, Any]]
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    warnings: list[str] = Field(
        default_factory=list,
        description="Files the run did not deliver (and how to deliver them), and raw files a Ready "
        "job was ingested without, each with why.",
    )
    undelivered: dict[str, Any] | None = Field(
        None,
        description="What the run's complete said it could not deliver: missing_files, lost_files, spill.",
    )
    summary: dict[str, Any] | None = Field(
        None, description="The compact summary once Ready (only when one job is read)."
    )
    upload: UploadInfo | None = Field(None, description="Where files go, while the job takes them.")
    progress: dict[str, int] | None = Field(
        None,
        description='While Processing, how far ingest is: {"traces_done": 3, "traces": 8, "bytes_done": '
        '120000000, "bytes": 400000000} (bytes: the traces\' raw files as stored; only when one job is '
        "read, once a job's traces are being ingested).",
    )
    stop_on: list[str] = Field(default_factory=list, description="Rules the run stops on.")
    stop_request: dict[str, Any] | None = Field(
        None,
        description='Set when a stop_on rule found issues: {"rule", "reason", "requested_at"}; '
        'when a person asked: {"by": "user", "actor", "requested_at"}.',
    )
    captures: list[dict[str, Any]] = Field(
        default_factory=list, description="PyTorch-profiler captures asked of the running job."
    )

    @classmethod
    def of(
        cls,
        job: Job,
        domain: str,
        user: str,
        *,
        upload: UploadInfo | None = None,
        summary: bool = False,
        progress: dict[str, int] | None = None,
        status_reason: str | None = None,
    ) -> JobRead:
        return cls(
            job_id=job.id,
            name=job.name,
            domain=domain,
            user=user,
            status=job.status,
            failure_reason=job.failure_reason,
            status_reason=status_reason,
            metric_definitions=list(job.metric_definitions or []),
            created_at=job.created_at,
            updated_at=job.updated_at,
            completed_at=job.completed_at,
            warnings=job_warnings(job),
            undelivered=job.undelivered,
            summary=job.summary if summary else None,
            upload=upload,
            progress=progress,
            stop_on=list(job.stop_on or []),
            stop_request=job.stop_request,
            captures=list(job.captures or []),
        )


def job_warnings(job: Job) -> list[str]:
    """The run's undelivered files first, then the raw files ingest left out."""
    first = undelivered_warning(job)
    return ([first] if first else []) + list((job.summary or {}).get("warnings") or [])


class UploadGrantCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=900, description="Relative path in the job's raw layout.")
    size: StrictInt | None = Field(
        None, ge=0, description="Bytes the file will have (checked against limits)."
    )


class UploadGrant(BaseModel):
    """A presigned request: send the file with ``method`` to ``url``, adding ``headers``."""

    url: str
    method: Literal["PUT"] = "PUT"
    headers: dict[str, str] = Field(default_factory=dict)
    expires_in: int


class JobCaptureCreate(BaseModel):
    """``POST …/jobs/{job_id}/captures``: a PyTorch-profiler capture asked of a running job."""

    model_config = ConfigDict(extra="forbid")

    steps: StrictInt = Field(ge=1, le=100, description="Steps to profile.")
    start_step: StrictInt | None = Field(
        None,
        ge=0,
        description="The step number to start at (give it so every rank starts together); "
        "default the run's next step.",
    )
    record_shapes: bool = Field(False, description="torch.profiler's record_shapes.")


class JobCapture(BaseModel):
    """A capture asked of a job (``Job.captures``)."""

    job_id: str
    id: str
    steps: int
    start_step: int | None
    record_shapes: bool
    requested_at: str
    by: str


class LogLine(BaseModel):
    ts_ns: int = Field(description="When the line was printed (ns since the epoch).")
    source: str = Field(description="stdout or stderr.")
    message: str


class JobLog(BaseModel):
    """One page of one rank's printed lines (``GET …/jobs/{job_id}/logs``)."""

    job_id: str
    ranks: list[int] = Field(description="The ranks that printed lines (one log stream each).")
    rank: int | None = Field(description="The rank of these lines (None: no lines yet).")
    stream: str | None = Field(description="The rank's CloudWatch Logs stream name (docs/sagemaker-api.md).")
    lines: list[LogLine]
    total: int = Field(description="Lines of the rank so far.")
    next_offset: int = Field(description="The offset to ask for next (to follow a running job's log).")
    dropped: dict[str, int] | None = Field(
        None, description="What the run kept and counted past its byte cap (job.json's logs), once known."
    )


class FileStored(BaseModel):
    path: str
    size: int


__all__ = [
    "FileStored",
    "JobComplete",
    "JobCapture",
    "JobCaptureCreate",
    "JobCreate",
    "JobLog",
    "JobRead",
    "LogLine",
    "MetricDefinition",
    "SpillInfo",
    "UploadGrant",
    "UploadGrantCreate",
    "UploadInfo",
    "job_warnings",
]
