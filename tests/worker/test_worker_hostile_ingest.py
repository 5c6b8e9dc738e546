"""Hostile raw files: gzip bombs, deep nesting, files past the per-job and the worker's memory
limits. Each ends its job (Failed, or Ready without that file and a warning naming it) with a
clear reason; nothing stays Processing, and a bomb is stopped before it is inflated in memory."""

from __future__ import annotations

import os
import threading
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest

from profilerhub_core.db.models import JobStatus
from profilerhub_core.settings import Settings
from profilerhub_worker.ingest import IngestContext, ingest_job
from profilerhub_worker.ingest.limits import (
    COPY_PREFIX,
    NO_LIMIT,
    RATIO_FREE_BYTES,
    MemoryBudget,
    OverLimit,
    cgroup_memory_limit,
    default_memory_budget,
    inflate_limit,
    remove_stale_copies,
)
from tests.support.jobs import job_row as row
from tests.support.jobs import make_job, sdk_files

BOMB_INFLATED = 256 << 20  # what the bomb inflates to: four times the test context's 64 MiB cap


def gzip_bomb(inflated: int = BOMB_INFLATED) -> bytes:
    """A gzip member of ``inflated`` zero bytes (about a thousandth of that compressed)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    parts = [deflate.compress(block) for _ in range(inflated >> 20)]
    return b"".join(parts) + deflate.flush()


def test_a_gzip_bomb_fails_its_job_without_being_inflated_in_memory(ctx: IngestContext) -> None:
    bomb = gzip_bomb()
    assert len(bomb) < BOMB_INFLATED // 500
    job_id, place = make_job(ctx, {"torch/bomb.pt.trace.json.gz": bomb})
    tracemalloc.start()
    try:
        assert ingest_job(job_id, ctx) == "Failed"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    reason = row(ctx, job_id).failure_reason or ""
    assert reason.startswith("raw/torch/bomb.pt.trace.json.gz: larger than the per-file limit of 64 MiB")
    assert "PROFILERHUB_JOB_MAX_TRACE_BYTES" in reason
    assert peak < 16 << 20, f"{peak} bytes held while a 64 MiB cap was reached"  # a few chunks, not the cap


def test_with_no_size_cap_a_gzip_bomb_is_stopped_by_its_inflate_ratio_as_it_streams(
    ctx: IngestContext,
) -> None:
    """The default: no per-trace cap (the disk bounds a trace, not memory); the bomb guard still
    stops a bomb at the first 64 MiB, before it fills the disk."""
    ctx.max_trace_bytes = ctx.max_ingest_bytes = NO_LIMIT
    assert ctx.max_inflate_ratio == Settings().job_max_inflate_ratio > 0
    job_id, _ = make_job(ctx, {"torch/bomb.pt.trace.json.gz": gzip_bomb()})
    assert ingest_job(job_id, ctx) == "Failed"
    reason = row(ctx, job_id).failure_reason or ""
    assert reason.startswith("raw/torch/bomb.pt.trace.json.gz: inflates to more than 200 times")
    assert "PROFILERHUB_JOB_MAX_INFLATE_RATIO" in reason


def test_the_size_caps_are_off_unless_an_operator_sets_them() -> None:
    settings = Settings()
    assert (settings.job_max_trace_bytes, settings.job_max_ingest_bytes) == (0, 0)
    assert inflate_limit(1 << 20, NO_LIMIT, 0.0) == NO_LIMIT
    assert inflate_limit(1 << 10, NO_LIMIT, 200.0) == RATIO_FREE_BYTES  # a small chunk: the free 64 MiB
    assert inflate_limit(1 << 20, NO_LIMIT, 200.0) == 200 << 20
    assert inflate_limit(1 << 30, 5 << 30, 200.0) == 5 << 30  # the operator's cap, when lower


def test_a_bomb_beside_good_files_is_left_out_with_a_warning(ctx: IngestContext) -> None:
    job_id, _ = make_job(ctx, sdk_files() | {"torch/bomb.pt.trace.json.gz": gzip_bomb()})
    assert ingest_job(job_id, ctx) == "Ready"
    job = row(ctx, job_id)
    assert job.summary is not None and job.summary["steps"]["count"] == 5
    assert [w.split(":")[0] for w in job.summary["warnings"]] == ["raw/torch/bomb.pt.trace.json.gz"]


def test_a_trace_ingest_fails_on_after_reading_it_is_left_out_as_a_bug_not_as_a_bad_file(
    ctx: IngestContext, shared_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A ValueError of ingest's own (the thread pool's TracePeak bug raised one) must not read as
    the user's broken file: the warning says it is ProfilerHub's, the log has the traceback."""
    from profilerhub_worker.ingest import summary

    def failing(name: str, store: Any) -> dict[str, Any]:
        raise ValueError("operands could not be broadcast together")

    monkeypatch.setattr(summary, "trace_summary", failing)
    trace = (shared_dir / "traces/torch-cpu/mlp_cpu_10steps.pt.trace.json").read_bytes()
    job_id, _ = make_job(ctx, sdk_files() | {"torch/rank0.pt.trace.json": trace})
    with caplog.at_level("ERROR", logger="profilerhub_worker.ingest"):
        assert ingest_job(job_id, ctx) == "Ready"  # the SDK's files still make the job
    [warning] = row(ctx, job_id).summary["warnings"]  # type: ignore[index]
    assert warning.startswith("raw/torch/rank0.pt.trace.json: read, but ingest failed on it (ValueError: ")
    assert "a bug in ProfilerHub, not in the file" in warning
    assert any(r.exc_info and "read, then ingest failed on it" in r.getMessage() for r in caplog.records)


def test_files_past_the_per_job_total_are_left_out(ctx: IngestContext) -> None:
    files = sdk_files()
    ctx.max_ingest_bytes = len(files["job.json"]) + 10  # job.json fits, then the budget is spent
    job_id, _ = make_job(ctx, files)
    assert ingest_job(job_id, ctx) == "Ready"
    warnings = row(ctx, job_id).summary["warnings"]  # type: ignore[index]
    assert len(warnings) == 3
    assert all("PROFILERHUB_JOB_MAX_INGEST_BYTES" in w for w in warnings)


def test_a_file_needing_more_than_the_workers_ingest_memory_fails_instead_of_waiting(
    ctx: IngestContext,
) -> None:
    ctx.memory = MemoryBudget(64)
    job_id, _ = make_job(ctx, sdk_files())
    assert ingest_job(job_id, ctx) == "Failed"
    assert "more than this worker's ingest memory" in (row(ctx, job_id).failure_reason or "")
    assert ctx.memory.used == 0


@pytest.mark.parametrize(
    ("v2", "v1", "limit"),
    [
        ("4294967296\n", None, 4 << 30),  # a pod's resources.limits.memory: 4Gi (cgroup v2)
        ("max\n", None, None),  # v2, no limit
        (None, "2147483648\n", 2 << 30),  # cgroup v1
        (None, "9223372036854771712\n", None),  # v1's "no limit"
        (None, None, None),  # no cgroup files: not Linux, or not mounted
    ],
)
def test_the_default_ingest_memory_is_half_the_containers_limit_where_it_has_one(
    tmp_path: Path, v2: str | None, v1: str | None, limit: int | None
) -> None:
    import psutil

    files = (tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes")
    for path, text in zip(files, (v2, v1), strict=True):
        if text is not None:
            path.write_text(text)
    assert cgroup_memory_limit(files) == limit
    machine = psutil.virtual_memory().total
    assert default_memory_budget(files) == min(machine, limit or machine) // 2


def test_the_memory_budget_makes_a_reservation_wait_for_the_memory_others_hold() -> None:
    budget = MemoryBudget(100)
    seen: list[int] = []
    first_in, let_go = threading.Event(), threading.Event()

    def first() -> None:
        with budget.reserve(60, "a"):
            first_in.set()
            let_go.wait()

    def second() -> None:
        first_in.wait()
        with budget.reserve(60, "b"):
            seen.append(budget.used)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    first_in.wait()
    assert seen == [] and budget.used == 60
    let_go.set()
    for t in threads:
        t.join()
    assert seen == [60] and budget.used == 0
    with pytest.raises(OverLimit, match="more than this worker's ingest memory"), budget.reserve(101, "c"):
        pass


def _nested(depth: int) -> bytes:
    return b'{"traceEvents": [], "deviceProperties": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("torch/deep.pt.trace.json", _nested(10**6)),
        ("job.json", b'{"job": ' + b"[" * 10**5 + b"]" * 10**5 + b"}"),
        ("job.json", b'{"a": ' * 10**5 + b"1" + b"}" * 10**5),
    ],
    ids=["trace-1e6", "job-json-1e5-lists", "job-json-1e5-objects"],
)
def test_deeply_nested_json_ends_its_job_with_a_clear_reason(
    ctx: IngestContext, name: str, data: bytes
) -> None:
    alone, _ = make_job(ctx, {name: data})
    beside, _ = make_job(ctx, sdk_files() | {name: data})
    assert ingest_job(alone, ctx) == "Failed"
    assert ingest_job(beside, ctx) == "Ready"
    reason = row(ctx, alone).failure_reason or ""
    assert reason.startswith(f"raw/{name}: ") and "Traceback" not in reason
    assert row(ctx, beside).summary["warnings"][0].startswith(f"raw/{name}: ")  # type: ignore[index]


def test_an_unexpected_error_fails_the_job_rather_than_leaving_it_processing(
    ctx: IngestContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("a bug in a reader")

    monkeypatch.setattr("profilerhub_worker.ingest.run.build_summary", broken)
    job_id, _ = make_job(ctx, sdk_files())
    assert ingest_job(job_id, ctx) == "Failed"
    job = row(ctx, job_id)
    assert job.status is JobStatus.Failed
    assert job.failure_reason == "Ingest failed unexpectedly (TypeError: a bug in a reader)"


def test_temporary_copies_of_a_dead_worker_are_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    dead = tmp_path / f"{COPY_PREFIX}999999999-abc"
    live = tmp_path / f"{COPY_PREFIX}{os.getpid()}-def"
    for folder in (dead, live):
        folder.mkdir()
        (folder / "trace.json").write_bytes(b"{}")
    assert remove_stale_copies(str(tmp_path)) == 1
    assert not dead.exists() and live.exists()


def test_an_ingest_leaves_no_temporary_copy(
    ctx: IngestContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    job_id, _ = make_job(ctx, sdk_files() | {"torch/bad.json": b"{not json"})
    assert ingest_job(job_id, ctx) == "Ready"
    assert list(tmp_path.glob(f"{COPY_PREFIX}*")) == []
