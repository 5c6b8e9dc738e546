"""End to end: ``profilerhub upload DIR --wait`` against a running hub and worker (real processes,
real Redis) uploads a folder of rank traces, follows the fanned-out ingest with a progress bar
(traces and bytes done) and exits 0 once the job is Ready; ``profilerhub jobs describe`` reads the
same job."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.jobs_stack import JobStack
from tests.support.hub import cli_command

pytestmark = pytest.mark.slow

RANKS = [
    "traces/hta/tests/data/trace_filter/sampled_rank-0.json.gz",
    "traces/hta/tests/data/trace_filter/sampled_rank-1.json.gz",
]


def test_upload_wait_follows_the_ingest_of_a_ranks_traces_until_the_job_is_ready(
    job_stack: JobStack, shared_dir: Path, tmp_path: Path
) -> None:
    token = job_stack.user_token("ml", "ulla")
    folder = tmp_path / "ranks"
    folder.mkdir()
    for n, src in enumerate(RANKS):  # the run's own folder, as torch.profiler leaves it
        (folder / f"rank_{n}.pt.trace.json.gz").write_bytes((shared_dir / src).read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
    env |= {"PROFILERHUB_URL": job_stack.url, "PROFILERHUB_TOKEN": token, "COLUMNS": "160"}
    done = subprocess.run(
        [*cli_command(), "upload", str(folder), "--job", "ranks", "--wait"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr + job_stack.output()
    assert "ready:" in done.stderr and "2 of 2 traces" in done.stderr, done.stderr
    job_id = done.stderr.split("job id ", 1)[1].split(":", 1)[0]
    described = subprocess.run(
        [*cli_command(), "jobs", "describe", job_id, "--output", "json"],
        env=env | {"PROFILERHUB_HUB": job_stack.url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert described.returncode == 0, described.stderr
    assert '"status": "Ready"' in described.stdout
