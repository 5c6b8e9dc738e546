"""``profilerhub analyze`` as a user runs it: a real process, JSON or tables, clean errors."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .tracegen import annotation, encode, kernel, memcpy, runtime, write_trace

CLI = [sys.executable, "-m", "profilerhub.cli.main", "analyze"]


def _run(*args: str | Path, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ) | ({"COLUMNS": str(columns)} if columns else {})
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=120, env=env)


def _events(scale: float = 1.0) -> list[dict]:
    return [
        annotation("ProfilerStep#1", 0, 100 * scale),
        runtime("cudaLaunchKernel", 1, 2, 1),
        kernel("ampere_sgemm_128x64_nn", 5, 40 * scale, 1),
        runtime("cudaMemcpyAsync", 4, 2, 2),
        memcpy("HtoD", 60 * scale, 5, 2, nbytes=4096),
        runtime("cudaLaunchKernel", 8, 2, 3),
        kernel("ncclKernel_AllReduce_RING", 70 * scale, 20, 3),
    ]


def test_json_output_has_the_documented_keys(tmp_path: Path) -> None:
    done = _run(write_trace(tmp_path / "t.json.gz", _events()), "--format", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for key in (
        "events",
        "kernels",
        "kernel_kinds",
        "launch_latency",
        "temporal",
        "memory_ops",
        "sync_ops",
        "steps",
        "utilization",
        "precision",
        "idle_breakdown",
    ):
        assert key in out
    assert out["events"] == 7
    assert {k["name"] for k in out["kernels"]} == {"ampere_sgemm_128x64_nn", "ncclKernel_AllReduce_RING"}
    assert set(out["kernels"][0]) >= {"name", "count", "total_us", "mean_us", "min_us", "max_us"}
    assert out["launch_latency"]["count"] == 3


def test_top_limits_the_kernel_list(tmp_path: Path) -> None:
    done = _run(write_trace(tmp_path / "t.json", _events(), gz=False), "--format", "json", "--top", "1")
    assert [k["name"] for k in json.loads(done.stdout)["kernels"]] == ["ampere_sgemm_128x64_nn"]


def test_table_output_shows_the_main_sections(tmp_path: Path) -> None:
    done = _run(write_trace(tmp_path / "t.json.gz", _events()))
    assert done.returncode == 0, done.stderr
    for title in (
        "Top kernels",
        "GPU time by kind",
        "Kernel launch latency",
        "Temporal breakdown",
        "Memory operations",
        "Steps",
        "ampere_sgemm_128x64_nn",
    ):
        assert title in done.stdout


LONG_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, " + "x" * 60


def _first_column(table: str, title: str) -> str:
    """The first column's cells of the table under ``title``, joined (undoing folds)."""
    lines = table.split(title, 1)[1].splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("└"))
    return "".join(line.split("│")[1].strip() for line in lines[:end] if line.startswith("│"))


@pytest.mark.parametrize("columns", [80, 120])
def test_tables_fit_the_terminal_and_wide_shows_whole_kernel_names(tmp_path: Path, columns: int) -> None:
    trace = write_trace(tmp_path / "t.json", [*_events(), kernel(LONG_KERNEL, 95, 30, 4)], gz=False)
    fitted = _run(trace, columns=columns)
    assert fitted.returncode == 0, fitted.stderr
    assert max(len(line) for line in fitted.stdout.splitlines()) <= columns, fitted.stdout
    assert LONG_KERNEL not in _first_column(fitted.stdout, "Top kernels") and "…" in fitted.stdout
    if columns == 80:
        assert "not shown at this width: min" in fitted.stdout
    wide = _run(trace, "--wide", columns=columns)
    assert max(len(line) for line in wide.stdout.splitlines()) <= columns
    assert LONG_KERNEL.replace(" ", "") in _first_column(wide.stdout, "Top kernels").replace(" ", "")


def test_directory_of_ranks_gives_per_rank_objects_aggregate_and_stragglers(tmp_path: Path) -> None:
    for rank in range(4):
        scale = 3.0 if rank == 2 else 1.0
        write_trace(tmp_path / f"rank{rank}.json.gz", _events(scale), distributedInfo={"rank": rank})
    done = _run(tmp_path, "--format", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [r["rank"] for r in out["ranks"]] == [0, 1, 2, 3]
    agg = out["aggregate"]
    assert agg["events"] == 28
    assert {k["name"]: k["count"] for k in agg["kernels"]} == {
        "ampere_sgemm_128x64_nn": 4,
        "ncclKernel_AllReduce_RING": 4,
    }
    assert agg["launch_latency"]["count"] == 12
    assert {s["rank"] for s in out["stragglers"]["stragglers"]} == {2}
    table = _run(tmp_path)
    assert "Stragglers" in table.stdout and "Per rank" in table.stdout


def test_directory_skips_files_that_are_not_traces(tmp_path: Path) -> None:
    write_trace(tmp_path / "rank0.json.gz", _events(), distributedInfo={"rank": 0})
    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    out = json.loads(_run(tmp_path, "--format", "json").stdout)
    assert len(out["ranks"]) == 1
    assert [Path(u["file"]).name for u in out["unreadable"]] == ["config.json"]
    only_junk = tmp_path / "junk"
    only_junk.mkdir()
    (only_junk / "config.json").write_text('{"lr": 0.1}')
    done = _run(only_junk)
    assert done.returncode == 2 and "no readable trace" in done.stderr


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("cut.json.gz", gzip.compress(encode([kernel("k", i, 1) for i in range(2000)]))[:300], "truncated"),
        ("text.json", b"hello, I am not JSON", "not valid JSON"),
        ("other.json", b'{"foo": [1, 2, 3]}', "traceEvents"),
        ("bad.json.gz", b"\x1f\x8bnot really gzip at all", "gzip"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_code_2(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    done = _run(path, "--format", "json")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]


def test_oversized_trace_names_the_setting_to_raise(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "big.json", [kernel("k", i, 1) for i in range(5000)], gz=False)
    done = _run(path, "--max-size", "64K")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--max-size" in done.stderr and "limit" in done.stderr


def test_missing_path_and_empty_directory_are_clear_errors(tmp_path: Path) -> None:
    missing = _run(tmp_path / "nope.json")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    empty = _run(tmp_path)
    assert empty.returncode == 2 and "no trace files" in empty.stderr


LOADED = """
import sys
from profilerhub.cli.main import main
sys.argv = ["profilerhub", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
heavy = ("typer", "pydantic", "click", "importlib.metadata", "profilerhub._api", "profilerhub_hub")
print("LOADED", code, sorted(m for m in heavy if m in sys.modules), file=sys.stderr)
"""


def _loaded(*args: str | Path) -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *map(str, args)], capture_output=True, text=True, timeout=120
    )
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("LOADED")]
    return done.stdout, line


def test_plain_analyze_runs_without_building_the_typer_app(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json.gz", _events())
    out, loaded = _loaded("analyze", "--format=json", "-n", "1", trace)
    assert loaded == "LOADED 0 []"
    assert [k["name"] for k in json.loads(out)["kernels"]] == ["ampere_sgemm_128x64_nn"]
    assert _loaded("analyze", trace, "--wide")[1] == "LOADED 0 []"


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--top", "0"],
        ["--top", "1", "--top", "2"],
        ["-fjson"],
        ["--format", "JSON"],
        ["--max-size", "lots"],
        ["--", "x"],
        ["--wider"],
    ],
)
def test_analyze_that_typer_must_judge_goes_through_the_typer_app(tmp_path: Path, args: list[str]) -> None:
    trace = write_trace(tmp_path / "t.json.gz", _events())
    assert "'typer'" in _loaded("analyze", trace, *args)[1]


def test_fast_path_and_typer_app_print_the_same(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from profilerhub.cli.main import app

    trace = write_trace(tmp_path / "t.json.gz", _events())
    for args in (["-f", "json", str(trace)], [str(trace), "--top", "2"], [str(tmp_path / "missing.json")]):
        fast = subprocess.run(
            [*CLI, *args], capture_output=True, timeout=120, env=dict(os.environ, COLUMNS="80")
        )
        typed = CliRunner().invoke(app, ["analyze", *args], env={"COLUMNS": "80"})
        assert (fast.returncode, fast.stdout.decode()) == (typed.exit_code, typed.stdout), args
