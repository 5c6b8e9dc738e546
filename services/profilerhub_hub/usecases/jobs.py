"""Jobs: create, complete, stop, capture, update rules, delete. Called by REST (``routes/jobs.py``,
the SDK's door) and SageMaker's training jobs (``StopTrainingJob``, ``UpdateTrainingJob``) alike."""

from __future__ import annotations

from typing import Any

from profilerhub_core.db.models import Job, JobStatus
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.records import jobs
from profilerhub_core.tasks import INGEST_JOB
from profilerhub_hub import job_control
from profilerhub_hub.deps.targets import Resolved
from profilerhub_hub.permissions import Action
from profilerhub_hub.usecases.door import Door


def create_job(
    door: Door,
    target: Resolved,
    name: str,
    metric_definitions: list[dict[str, Any]],
    rules: list[dict[str, Any]] | None = None,
    stop_on: Any = None,
) -> Job:
    """A new InProgress job of the target user, taking raw files until it is completed."""
    assert target.domain is not None and target.user is not None
    job = jobs.create_job(door.session, target.domain, target.user, name, metric_definitions, rules, stop_on)
    door.commit(target, Action.CreateJob, job.id, detail={"user": target.user.name, "name": job.name})
    return job


def complete_job(door: Door, target: Resolved, job: Job, undelivered: dict[str, Any] | None = None) -> Job:
    """Mark the upload finished and send ``INGEST_JOB``. Repeating it is harmless (it audits nothing
    and sends ingest again); a Ready or Failed job whose missing files arrived is ingested anew."""
    again = job.status in (JobStatus.Ready, JobStatus.Failed)
    if jobs.mark_complete(door.session, job, undelivered):
        detail: dict[str, Any] = {"missing_files": undelivered["missing_files"]} if undelivered else {}
        if again:
            detail["ingest_again"] = True
        door.commit(target, Action.CompleteJob, job.id, detail=detail)
    if job.status is JobStatus.InProgress:
        door.send(INGEST_JOB, job.id)
    return job


def delete_job(door: Door, target: Resolved, job: Job) -> None:
    """Delete the job (refused while Processing), then every object it has in storage."""
    assert target.domain is not None and target.user is not None
    job_id, prefix = job.id, JobPlace(target.domain.id, target.user.id, job.id).prefix
    jobs.delete_job(door.session, job)
    door.commit(target, Action.DeleteJob, job_id)
    # After the commit: a failed commit must not leave a row whose files are gone. A storage
    # failure now leaves objects no row owns, which the sweeper removes.
    door.delete_owned(prefix, f"job {job_id}")


def stop_job(door: Door, target: Resolved, job: Job) -> Job:
    """Ask the running job's run to stop (``job_control.request_stop``; ``Conflict`` once it is
    over). Asking again changes nothing and audits nothing."""
    if job_control.request_stop(door.session, target, job):
        door.commit(target, Action.StopJob, job.id)
    return job


def capture_job(
    door: Door, target: Resolved, job: Job, steps: int, start_step: int | None, record_shapes: bool
) -> dict[str, Any]:
    """Ask the running job's run for a PyTorch-profiler capture of ``steps`` steps from
    ``start_step`` (else its next step); audited as ``UpdateJob``. The request."""
    capture = job_control.capture_request(
        door.open_store(), job, steps, start_step, record_shapes, target.caller.actor
    )
    jobs.add_capture(door.session, job, capture)
    door.commit(target, Action.UpdateJob, job.id, detail={"capture": capture})
    return capture


def update_rules(door: Door, target: Resolved, job: Job, rules: list[dict[str, Any]]) -> None:
    """Replace the rules of a job (checked configurations); the live scan and ingest use them."""
    jobs.set_rules(door.session, job, rules)
    door.commit(target, Action.UpdateJob, job.id, detail={"rules": [r["rule"] for r in rules]})


__all__ = ["capture_job", "complete_job", "create_job", "delete_job", "stop_job", "update_rules"]
