"""The analyser agrees with the HTA oracle on every shared sample trace (../shared/oracle)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_oracle_compare_passes_on_all_sample_traces(shared_dir: Path) -> None:
    oracle = shared_dir / "oracle"
    if not (oracle / "compare.py").exists():
        pytest.skip(f"oracle not found at {oracle} (expected the shared checkout next to the repo)")
    cli = Path(sys.executable).parent / "profilerhub"
    done = subprocess.run(
        [
            sys.executable,
            str(oracle / "compare.py"),
            str(oracle / "expected"),
            str(shared_dir / "traces"),
            "--",
            str(cli),
            "analyze",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.stdout.strip().splitlines()[-1] == "16 passed, 0 failed", done.stdout + done.stderr
    assert done.returncode == 0
