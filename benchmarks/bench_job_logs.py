"""What one poll of a job's log costs the hub: ``job_logs.page``, as ``GET …/jobs/{id}/logs`` and
the app's log panel call it, on a log at the SDK's 8 MiB cap.

    .venv/bin/python benchmarks/bench_job_logs.py [--mib 8] [--lines-per-chunk 500] [--repeat 20]

Writes ``--mib`` MiB of printed lines (one rank, chunks of ``--lines-per-chunk`` lines, as the SDK
uploads them) to a local store, then prints the CPU time (``time.process_time``) of:

- the first page (every chunk decoded, to count the lines: what a hub that just started pays once),
- a follow poll at the log's end (``offset`` = the total: only the last chunk is decoded),
- a follow poll after one more chunk arrived (its lines answered),
- the whole log decoded (``events``: what each poll cost before the counts were kept).
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from profilerhub_core.db.models import Job
from profilerhub_core.jobstorage import place_of
from profilerhub_core.storage.local import LocalStore
from profilerhub_hub import job_logs


def _chunk(first: int, n: int) -> bytes:
    lines = [
        {"ts_ns": 10**18 + first + k, "source": "stdout",
         "message": f"step {first + k} loss=2.{k:04d} acc=0.5{k:03d} lr=1e-3 throughput=1234.5 samples/s"}
        for k in range(n)
    ]  # fmt: skip
    return gzip.compress(("\n".join(json.dumps(line) for line in lines) + "\n").encode())


def _cpu_ms(work: object, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=8.0)
    parser.add_argument("--lines-per-chunk", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    store = LocalStore(Path(tempfile.mkdtemp(prefix="bench-job-logs-")))
    job = Job(id="bench-job", domain_id="d", user_id="u", name="bench", created_at=datetime.now(UTC))
    prefix = place_of(job).raw_prefix
    written, seq, lines = 0, 0, 0
    while written < args.mib * (1 << 20):
        seq += 1
        data = _chunk(lines, args.lines_per_chunk)
        store.put(f"{prefix}logs/rank0/{seq:06d}.jsonl.gz", data)
        written += len(gzip.decompress(data))
        lines += args.lines_per_chunk
    keys = job_logs.ranks(store, job)[0]

    start = time.process_time()
    first = job_logs.page(store, job, 0, 0, 1000)
    cold = (time.process_time() - start) * 1000
    tail = _cpu_ms(lambda: job_logs.page(store, job, 0, first.total, 1000), args.repeat)
    store.put(f"{prefix}logs/rank0/{seq + 1:06d}.jsonl.gz", _chunk(lines, args.lines_per_chunk))
    new = job_logs.page(store, job, 0, first.total, 1000)
    assert len(new.lines) == args.lines_per_chunk, len(new.lines)
    grown = _cpu_ms(lambda: job_logs.page(store, job, 0, first.total, 1000), args.repeat)
    whole = _cpu_ms(lambda: job_logs.events(store, keys), max(1, args.repeat // 5))
    print(f"log: {lines:,} lines, {written / 2**20:.1f} MiB in {len(keys)} chunks (one rank)")
    print(f"first page (counts every chunk)          {cold:8.1f} ms CPU")
    print(f"follow poll at the end (nothing new)     {tail:8.1f} ms CPU")
    print(f"follow poll with one new chunk           {grown:8.1f} ms CPU")
    print(f"every chunk decoded (the former poll)    {whole:8.1f} ms CPU")


if __name__ == "__main__":
    main()
