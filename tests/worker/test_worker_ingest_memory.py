"""One trace's ingest memory (``profilerhub_worker.ingest.memory``): the peak RSS a task measures
of itself, and an eight-rank job with a trace larger than its budget ingested by two real workers
under it, one of them killed mid-trace."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from profilerhub_analysis.report import analyze_file
from profilerhub_core.db.models import JobStatus
from profilerhub_core.storage import layout
from profilerhub_core.tasks import INGEST_JOB
from profilerhub_worker.celery_app import make_celery
from profilerhub_worker.ingest import IngestContext, memory
from profilerhub_worker.ingest.limits import PARSE_MEMORY_FACTOR
from profilerhub_worker.ingest.memory import rss_bytes, trace_memory, trim_at
from profilerhub_worker.ingest.read import trace_reservation
from tests.support.hub import TEST_SECRET_KEY, start_profilerhub, wait_for
from tests.support.jobs import job_row, make_job, sdk_files
from tests.support.retimed import SOURCE, write_retimed

MIB = 1 << 20


def test_the_measured_peak_is_the_blocks_own_not_the_processs_since_it_started() -> None:
    with trace_memory(4 << 30) as big:
        held = np.ones(300 * MIB, dtype=np.uint8)  # touched: 300 MiB resident
        del held
    assert big.alone and not big.since_start
    assert big.peak_rss >= big.base_rss + 290 * MIB, big.describe()
    with trace_memory(4 << 30) as small:  # the mark is reset at the start: the 300 MiB is not in it
        held = np.ones(20 * MIB, dtype=np.uint8)
        del held
    assert small.peak_rss < big.peak_rss - 200 * MIB, (small.describe(), big.describe())
    assert small.peak_rss >= small.base_rss
    assert not small.over and small.as_record()["budget_bytes"] == 4 << 30


def test_traces_measured_at_once_in_one_process_say_they_shared_the_mark() -> None:
    inside, leave = threading.Event(), threading.Event()
    peaks = []

    def other() -> None:
        with trace_memory(1 << 30) as peak:
            peaks.append(peak)
            inside.set()
            leave.wait()

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait()
    with trace_memory(1 << 30) as mine:
        pass
    leave.set()
    thread.join()
    assert not mine.alone and not peaks[0].alone
    assert "other traces ingested in this process meanwhile" in mine.describe()
    with trace_memory(1 << 30) as later:
        pass
    assert later.alone


def test_two_traces_with_the_same_figures_measured_at_once_each_end_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker's thread pool ingests two traces at once; with equal figures (same RSS when they
    started) the later one ending first took the earlier one's place in the list (equality, not
    identity), and the earlier one's end then failed (``ValueError``, the trace left out of its job:
    test_e2e_pages' forty-rank job lost a rank in two CI runs and one of four runs of tests/e2e here)."""
    monkeypatch.setattr(memory, "rss_bytes", lambda: 100 * MIB)
    first, second = trace_memory(1 << 30), trace_memory(1 << 30)
    a, b = first.__enter__(), second.__enter__()
    assert a.as_record() == b.as_record() and a is not b
    second.__exit__(None, None, None)
    first.__exit__(None, None, None)
    assert memory._measuring == []
    assert a.peak_rss > 0 and b.peak_rss > 0


def test_a_trace_reserves_its_factor_of_its_size_and_never_more_than_its_budget() -> None:
    assert trace_reservation(100 * MIB, 1 << 30) == int(100 * MIB * PARSE_MEMORY_FACTOR)
    assert trace_reservation(16 << 30, 1 << 30) == 1 << 30  # a 16 GiB trace: the budget, not 24 GiB
    assert trim_at(1 << 30) == (1 << 30) - (128 * MIB) and trim_at(128 * MIB) == 96 * MIB
    assert rss_bytes() > 0


# --------------------------------------------------------------- a real worker, a trace over budget

#: The budget the worker runs with here: low, so that a trace larger than it stays quick to make.
BUDGET = 512 * MIB
#: Events of the generated trace: 756 MiB of JSON once decompressed, about 1.5 times the budget.
EVENTS = 2_600_000
#: What the budget must leave above the worker's own RSS for the test to mean anything.
MARGIN = 192 * MIB
#: Ranks of the fanned-out job, and the events of each trace but rank 0's (about 60 MiB of JSON).
RANKS = 8
SMALL_EVENTS = 200_000


def _rss_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) << 10
    raise AssertionError(f"no VmRSS for process {pid}")


def _kill_tree(pid: int) -> None:
    """SIGKILL a worker and its pool's processes at once (what an OOM-killed or evicted pod gets)."""
    import psutil

    main = psutil.Process(pid)
    for proc in [*main.children(recursive=True), main]:
        proc.kill()
    psutil.wait_procs([main], timeout=30)


def _worker(name: str, tmp_path: Path, hub_db_url: str, env: dict[str, str]) -> Any:
    return start_profilerhub(
        "worker", home=tmp_path / f"home-{name}", log=tmp_path / f"worker-{name}.log",
        database_url=hub_db_url, env=env,
        args=["--queues", "ingest", "--concurrency", "1", "--loglevel", "info"],
        wait=False,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("hub_db_url", ["postgresql"], indirect=True)  # workers and test: processes
def test_two_real_workers_ingest_an_eight_rank_job_one_killed_mid_trace_each_trace_under_budget(
    ctx: IngestContext, hub_db_url: str, redis_url: str, shared_dir: Path, tmp_path: Path
) -> None:
    """Eight ranks: rank 0's trace 1.5 times the per-trace budget, ranks 1-7 smaller. Two worker
    processes share the ingest queue. The one that takes the job's claim parses rank 0 (the first
    trace: the claim's own); the other takes the fanned-out tasks, and is killed (SIGKILL, the pool
    with it) while it parses one. The claim's task parses the rest and, once that trace's lease
    lapses, the killed one again: the job Ready once, every trace's figures those ``profilerhub
    analyze`` gives of it alone, every trace's peak RSS (measured by the task) under the budget."""
    import redis

    from profilerhub_worker.ingest.fanout import LEASE_PREFIX

    traces: dict[str, Path] = {}
    for rank in range(RANKS):
        traces[f"torch/rank{rank}.pt.trace.json.gz"] = path = tmp_path / f"rank{rank}.pt.trace.json.gz"
        size = write_retimed(shared_dir / SOURCE, path, EVENTS if rank == 0 else SMALL_EVENTS)
        if rank == 0:
            assert size > BUDGET * 1.25, f"rank 0's trace ({size / MIB:.0f} MiB) must pass the budget"
    files = sdk_files(steps=3) | {rel: path.read_bytes() for rel, path in traces.items()}
    job_id, place = make_job(ctx, files)
    queue = f"phmem-{uuid.uuid4().hex[:10]}"
    env = {
        "PROFILERHUB_REDIS_URL": redis_url,
        "PROFILERHUB_CELERY_QUEUE": queue,
        "PROFILERHUB_STORAGE_URL": (tmp_path / "store").as_uri(),  # ctx's store
        "PROFILERHUB_JOB_INGEST_TRACE_MEMORY_BYTES": str(BUDGET),
        "PROFILERHUB_JOB_INGEST_HEARTBEAT_SECONDS": "1",  # a dead worker's lease lapses in seconds
        "PROFILERHUB_SECRET_KEY": TEST_SECRET_KEY,
    }
    workers = {name: _worker(name, tmp_path, hub_db_url, env) for name in ("one", "two")}
    leases = redis.Redis.from_url(redis_url)
    try:
        for w in workers.values():
            wait_for(lambda w=w: " ready." in w.output() or w.process.poll() is not None, "worker ready", 180)
            assert w.process.poll() is None, w.output()
        baseline = max(_rss_of(w.process.pid) for w in workers.values())  # idle: interpreter, libraries
        assert baseline + MARGIN < BUDGET, f"a worker alone holds {baseline / MIB:.0f} MiB: no room to test"
        make_celery(redis_url, queue=queue).send_task(INGEST_JOB, args=[job_id])
        claimed = wait_for(
            lambda: next((n for n, w in workers.items() if f"{INGEST_JOB}[" in w.output()), None),
            "a worker taking the job's claim", 120,
        )  # fmt: skip
        helper = next(n for n in workers if n != claimed)

        def helper_mid_trace() -> int | None:
            """A trace whose lease is held while the claim's task is still on rank 0: the helper's."""
            if ctx.store.exists(place.processed_key(layout.trace_part(0))):
                return None
            for key in leases.scan_iter(f"{LEASE_PREFIX}{job_id}:*"):
                n = int(key.decode().rsplit(":", 1)[1])
                if n and not ctx.store.exists(place.processed_key(layout.trace_part(n))):
                    return n
            return None

        killed = wait_for(helper_mid_trace, "the helper worker parsing a trace", 300, interval=0.01)
        _kill_tree(workers[helper].process.pid)
        assert not ctx.store.exists(place.processed_key(layout.trace_part(killed))), "killed too late"
        wait_for(
            lambda: job_row(ctx, job_id).status in (JobStatus.Ready, JobStatus.Failed),
            lambda: f"the job ingested\n{workers[claimed].output()[-3000:]}",
            900,  # a 2-core machine under load: minutes, but memory and recovery are what is tested
        )
        claim_log = workers[claimed]
        wait_for(lambda: "'Ready'" in claim_log.output(), "the claim's task ending Ready in its log", 60)
        log = claim_log.output()
    finally:
        leases.close()
        for w in workers.values():
            w.stop() if w.process.poll() is None else None
    row = job_row(ctx, job_id)
    assert row.status is JobStatus.Ready, (row.failure_reason, log[-3000:])
    assert log.count("'Ready'") == 1, log[-3000:]  # the claim's task ended Ready, once
    print(f"{claimed} held the claim; {helper} was killed while parsing trace {killed}")

    summary = json.loads(ctx.store.get(place.processed_key(layout.SUMMARY)))
    assert [t["file"] for t in summary["traces"]] == list(traces) and summary["warnings"] == []
    for n, (rel, path) in enumerate(traces.items()):
        memory = json.loads(ctx.store.get(place.processed_key(layout.trace_part(n))))["memory"]
        peak, base = memory["peak_rss_bytes"], memory["base_rss_bytes"]
        said = f"{rel}: peak RSS {peak / MIB:.0f} MiB ({base / MIB:.0f} before it) of {BUDGET / MIB:.0f} MiB"
        print(said)
        assert memory["budget_bytes"] == BUDGET and not memory["since_start"], memory
        assert base <= peak < BUDGET, said
        report = summary["traces"][n]["report"]
        alone = analyze_file(path)  # what `profilerhub analyze` reports of the same file, by itself
        assert {k: v for k, v in report.items() if k != "source"} == {
            k: json.loads(json.dumps(alone[k])) for k in report if k != "source"
        }, rel
    big = json.loads(ctx.store.get(place.processed_key(layout.trace_part(0))))["memory"]
    assert big["alone"] and big["peak_rss_bytes"] > big["base_rss_bytes"] + 32 * MIB  # its own mark
    assert summary["traces"][0]["report"]["events"] >= EVENTS * 0.95
    assert f"rank{killed}.pt.trace.json.gz: ingested" in log  # the killed trace, parsed again here
