"""Ingest: a completed job's raw files -> the analysis engine's event store and a summary.

    summary    pure functions: the SDK's raw records and trace reports -> the summary dict
    run        ingest_job(job_id, ctx) and reconcile_jobs(ctx): claim, read, write, finish

The task names are in ``profilerhub_core.tasks`` (the hub/worker contract).
"""
