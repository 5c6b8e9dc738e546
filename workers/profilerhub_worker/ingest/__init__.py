"""Ingest: a completed job's raw files -> the analysis engine's event store and a summary.

    context    IngestContext (database, store, limits) and the two exceptions
    claim      take a job for ingest and finish the claim, by compare-and-set
    read       stream and check each raw file, parse it into the summary
    summary    pure functions: the SDK's raw records and trace reports -> the summary dict
    write      event stores, processed/status.json, JSON-ready values
    run        ingest_job(job_id, ctx): claim, read, write, finish
    reconcile  reconcile_jobs(ctx): re-send stuck jobs, close jobs a dead run left open

The task names are in ``profilerhub_core.tasks`` (the hub/worker contract).
"""

from profilerhub_worker.ingest.claim import claim
from profilerhub_worker.ingest.context import BadUpload, IngestContext, IngestInterrupted
from profilerhub_worker.ingest.read import build_summary
from profilerhub_worker.ingest.reconcile import close_idle_jobs, reconcile_jobs
from profilerhub_worker.ingest.run import ingest_job

__all__ = [
    "BadUpload",
    "IngestContext",
    "IngestInterrupted",
    "build_summary",
    "claim",
    "close_idle_jobs",
    "ingest_job",
    "reconcile_jobs",
]
