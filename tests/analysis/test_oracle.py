"""The analyser agrees with the HTA oracle on every shared sample trace (../shared/oracle)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _compare(shared_dir: Path, *args: str, expected: str, command: str) -> subprocess.CompletedProcess[str]:
    oracle = shared_dir / "oracle"
    if not (oracle / "compare.py").exists():
        pytest.skip(f"oracle not found at {oracle} (expected the shared checkout next to the repo)")
    if not (oracle / expected).is_dir():
        pytest.skip(f"oracle has no {expected}/ at {oracle}")
    cli = Path(sys.executable).parent / "profilerhub"
    return subprocess.run(
        [
            sys.executable,
            str(oracle / "compare.py"),
            *args,
            str(oracle / expected),
            str(shared_dir / "traces"),
            "--",
            str(cli),
            command,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_oracle_compare_passes_on_all_sample_traces(shared_dir: Path) -> None:
    done = _compare(shared_dir, expected="expected", command="analyze")
    assert done.stdout.strip().splitlines()[-1] == "16 passed, 0 failed", done.stdout + done.stderr
    assert done.returncode == 0


@pytest.mark.slow
def test_oracle_newer_sections_pass_on_all_sample_traces(shared_dir: Path) -> None:
    """idle_breakdown, queue_length, comm_comp_overlap, memory_bw, launch_stats, gpu_metrics."""
    done = _compare(shared_dir, expected="expected-more", command="analyze")
    assert done.stdout.strip().splitlines()[-1] == "16 passed, 0 failed", done.stdout + done.stderr
    assert done.returncode == 0


@pytest.mark.slow
def test_oracle_tensorboard_plugin_views_pass_on_all_sample_traces(shared_dir: Path) -> None:
    """tb_overview, tb_gpu_summary, tb_operators(_by_shape), tb_kernels(_by_op), tb_memory: the views of
    PyTorch's TensorBoard profiler plugin, computed by its own code (expected-tb/)."""
    done = _compare(shared_dir, expected="expected-tb", command="analyze")
    assert done.stdout.strip().splitlines()[-1] == "16 passed, 0 failed", done.stdout + done.stderr
    assert done.returncode == 0


@pytest.mark.slow
def test_profilerhub_compare_matches_the_oracle_on_the_trace_pair(shared_dir: Path) -> None:
    done = _compare(shared_dir, "--pair", expected="expected-more", command="compare")
    assert done.stdout.strip().splitlines()[-1] == "1 passed, 0 failed", done.stdout + done.stderr
    assert done.returncode == 0
