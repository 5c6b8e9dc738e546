"""``profilerhub compare`` as a user runs it: two traces or two job directories, JSON or tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .tracegen import annotation, kernel, runtime, write_trace

CLI = [sys.executable, "-m", "profilerhub.cli.main", "compare"]


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


def _run_dir(root: Path, scale: float) -> Path:
    """A job directory as the SDK leaves it: job.json beside one trace per rank."""
    (root / "raw" / "torch").mkdir(parents=True)
    (root / "raw" / "job.json").write_text(json.dumps({"job": "demo"}))
    for rank in (0, 1):
        events = [
            annotation("ProfilerStep#1", 0, 100),
            runtime("cudaLaunchKernel", 1, 2, 1),
            kernel("gemm", 5, 40 * scale, 1),
        ]
        write_trace(root / "raw" / "torch" / f"rank{rank}.json.gz", events)
    return root


def test_json_compares_job_directories_rank_by_rank_summed(tmp_path: Path) -> None:
    done = _run(_run_dir(tmp_path / "a", 1.0), _run_dir(tmp_path / "b", 1.5), "--format", "json")
    assert done.returncode == 0, done.stderr
    c = json.loads(done.stdout)["compare"]
    assert c["base"]["ranks"] == 2 and c["test"]["ranks"] == 2
    (gemm,) = [k for k in c["kernels"] if k["name"] == "gemm"]
    assert (gemm["base_total_us"], gemm["test_total_us"], gemm["pct"]) == (80.0, 120.0, 50.0)
    assert c["ops"][0]["name"] == "gemm"  # the biggest change first


def test_table_shows_the_summary_and_the_deltas(tmp_path: Path) -> None:
    base = write_trace(tmp_path / "base.json.gz", [kernel("gemm", 0, 10), kernel("relu", 20, 1)])
    test = write_trace(tmp_path / "test.json.gz", [kernel("gemm", 0, 30), kernel("new_kernel", 40, 2)])
    done = _run(base, test)
    assert done.returncode == 0, done.stderr
    expected = ("Summary", "Kernels by impact", "+20.000 µs", "Only in test (1): new_kernel", "Only in base")
    for text in expected:
        assert text in done.stdout, text


def test_a_missing_or_traceless_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json.gz", [kernel("gemm", 0, 10)])
    missing = _run(tmp_path / "nope.json", trace)
    assert missing.returncode == 2 and "no such file" in missing.stderr and "Traceback" not in missing.stderr
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "a.json").write_text("{}")
    traceless = _run(tmp_path / "empty", trace)
    assert traceless.returncode == 2 and "no readable trace" in traceless.stderr
