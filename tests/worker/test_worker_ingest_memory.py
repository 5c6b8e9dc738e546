"""One trace's ingest memory (``profilerhub_worker.ingest.memory``): the peak RSS a task measures
of itself, and a trace larger than its budget ingested by a real worker under it."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import numpy as np
import pytest

from profilerhub_analysis.report import analyze_file
from profilerhub_core.db.models import JobStatus
from profilerhub_core.storage import layout
from profilerhub_core.tasks import INGEST_JOB
from profilerhub_worker.celery_app import make_celery
from profilerhub_worker.ingest import IngestContext
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


def _rss_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) << 10
    raise AssertionError(f"no VmRSS for process {pid}")


@pytest.mark.slow
@pytest.mark.parametrize("hub_db_url", ["postgresql"], indirect=True)  # worker and test: two processes
def test_a_real_worker_ingests_a_trace_larger_than_its_budget_under_it(
    ctx: IngestContext, hub_db_url: str, redis_url: str, shared_dir: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "rank0.pt.trace.json.gz"
    size = write_retimed(shared_dir / SOURCE, trace, EVENTS)
    assert size > BUDGET * 1.25, f"the trace ({size / MIB:.0f} MiB) must be larger than the budget"
    files = sdk_files(steps=3) | {"torch/rank0.pt.trace.json.gz": trace.read_bytes()}
    job_id, place = make_job(ctx, files)
    queue = f"phmem-{uuid.uuid4().hex[:10]}"
    env = {
        "PROFILERHUB_REDIS_URL": redis_url,
        "PROFILERHUB_CELERY_QUEUE": queue,
        "PROFILERHUB_STORAGE_URL": (tmp_path / "store").as_uri(),  # ctx's store
        "PROFILERHUB_JOB_INGEST_TRACE_MEMORY_BYTES": str(BUDGET),
        "PROFILERHUB_SECRET_KEY": TEST_SECRET_KEY,
    }
    worker = start_profilerhub(
        "worker", home=tmp_path / "home", log=tmp_path / "worker.log", database_url=hub_db_url, env=env,
        args=["--queues", "ingest", "--concurrency", "1", "--loglevel", "info"], wait=False,
    )  # fmt: skip
    try:
        wait_for(
            lambda: " ready." in worker.output() or worker.process.poll() is not None, "worker ready", 180
        )
        assert worker.process.poll() is None, worker.output()
        baseline = _rss_of(worker.process.pid)  # the idle worker: interpreter, libraries, connections
        assert baseline + MARGIN < BUDGET, f"the worker alone holds {baseline / MIB:.0f} MiB: no room to test"
        make_celery(redis_url, queue=queue).send_task(INGEST_JOB, args=[job_id])
        wait_for(
            lambda: job_row(ctx, job_id).status in (JobStatus.Ready, JobStatus.Failed),
            lambda: f"the job ingested\n{worker.output()[-3000:]}",
            900,  # a 2-core machine under load: minutes, but memory is what is tested
        )
        log = worker.output()
    finally:
        worker.stop()
    row = job_row(ctx, job_id)
    assert row.status is JobStatus.Ready, (row.failure_reason, log[-3000:])
    part = json.loads(ctx.store.get(place.processed_key(layout.trace_part(0))))
    memory = part["memory"]
    peak, base = memory["peak_rss_bytes"], memory["base_rss_bytes"]
    said = (
        f"trace {size / MIB:.0f} MiB decompressed, {EVENTS} events; worker idle {baseline / MIB:.0f} MiB "
        f"(measured here), {base / MIB:.0f} MiB when the trace started; peak RSS {peak / MIB:.0f} MiB; "
        f"budget {BUDGET / MIB:.0f} MiB"
    )
    print(said)
    assert memory["alone"] and not memory["since_start"], memory
    assert memory["budget_bytes"] == BUDGET
    assert base <= peak < BUDGET, said
    assert peak > base + 32 * MIB, said  # the parse did hold memory: the mark was the trace's own
    assert "rank0.pt.trace.json.gz: ingested" in log and f"of a {BUDGET >> 20} MiB budget" in log

    summary = json.loads(ctx.store.get(place.processed_key(layout.SUMMARY)))
    [ingested] = summary["traces"]
    alone = analyze_file(trace)  # what `profilerhub analyze` reports of the same file, by itself
    report = ingested["report"]
    assert {k: v for k, v in report.items() if k != "source"} == {
        k: json.loads(json.dumps(alone[k])) for k in report if k != "source"
    }
    assert report["events"] >= EVENTS * 0.95
