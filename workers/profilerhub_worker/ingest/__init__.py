"""Ingest: a completed job's raw files -> the analysis engine's event store and a summary.

    names      (here) the task names the hub sends by
    summary    pure functions: the SDK's raw records and trace reports -> the summary dict
    run        ingest_job(job_id, ctx) and reconcile_jobs(ctx): claim, read, write, finish

The hub imports only this module (for the names), never the task code.
"""

INGEST_JOB = "profilerhub.jobs.ingest"
RECONCILE_JOBS = "profilerhub.jobs.reconcile"
SWEEP_STORAGE = "profilerhub.jobs.sweep_storage"

__all__ = ["INGEST_JOB", "RECONCILE_JOBS", "SWEEP_STORAGE"]
