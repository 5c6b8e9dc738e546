"""Fork safety: DataLoader workers and os.fork children neither upload twice nor hang."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .fakehub import FakeHub
from .rawfiles import records

SCRIPT = Path(__file__).with_name("forking_script.py")


def test_forked_children_upload_nothing_and_the_parent_finishes_at_exit(fakehub: FakeHub) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "forking"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]

    job = fakehub.job_named("forking")
    assert len(fakehub.jobs) == 1 and job.completions == 1
    assert job.puts["job.json"] == 2 and all(n == 1 for p, n in job.puts.items() if p != "job.json")
    ranges = records(job.files, "annotations")
    assert sorted({r["name"] for r in ranges}) == ["step_0", "step_1", "step_2", "step_3", "train"]
    assert records(job.files, "metrics") == []  # worker prints and log_metric calls were not recorded
