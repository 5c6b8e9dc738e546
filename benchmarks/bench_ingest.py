#!/usr/bin/env python3
"""Ingest speed: a long SDK run plus a real trace, against the floor of just decoding the files.

Builds, in a local store, the raw files of a run of ``--hours`` hours as the SDK writes them
(system samples at 10 Hz, ``--steps-per-s`` steps with two annotations each, one metric per step,
chunks every 5 s) plus the PyTorch-profiler trace ``--trace``, then times:

  decode floor   gunzip + ``orjson.loads`` of every chunk line and the trace (no analysis at all)
  trace only     ``analyze_file`` of the trace (what ``profilerhub analyze`` does)
  ingest         ``build_summary`` with the trace's views written as ingest writes them
                 (``views.put_trace``: dashboard panels, timeline): every file read, checked and
                 summarised, everything under ``processed/`` written

and prints what ``processed/`` then holds (objects and bytes; the raw files are not counted).

Usage:
  .venv/bin/python benchmarks/bench_ingest.py [--hours 1] [--steps-per-s 10] [--trace PATH]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shlex
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import orjson

from profilerhub_analysis.report import analyze_file
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.storage import LocalStore
from profilerhub_worker.ingest import IngestContext, build_summary
from profilerhub_worker.ingest.views import put_trace

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TRACE = ROOT.parent / "shared/traces/hta/tests/data/negative_queue_length_values_check/rank0.json.gz"


def _chunk(records: list[dict[str, object]]) -> bytes:
    return gzip.compress(("\n".join(json.dumps(r) for r in records) + "\n").encode(), compresslevel=5)


def write_run(store: LocalStore, place: JobPlace, hours: float, steps_per_s: int, trace: Path) -> int:
    """The SDK's raw files for the run; returns how many records were written."""
    t0, second = 1_000_000_000_000, 1_000_000_000
    total, step = 0, 0
    for seq, chunk_start in enumerate(range(0, int(hours * 3600), 5), start=1):
        system, annotations, metrics = [], [], []
        for k in range(50):  # 10 Hz for 5 s
            ts = t0 + chunk_start * second + k * second // 10
            system.append(
                {
                    "ts_ns": ts,
                    "cpu_percent": k % 100,
                    "cpu_percent_per_core": [k % 7] * 8,
                    "mem_used_bytes": 10**9 + k,
                    "mem_total_bytes": 2 * 10**9,
                    "mem_percent": 50.0,
                }
            )
        for _ in range(5 * steps_per_s):
            s = t0 + step * second // steps_per_s
            annotations += [
                {
                    "kind": "annotation",
                    "name": "forward",
                    "start_ns": s,
                    "end_ns": s + 3_000_000,
                    "step": step,
                },
                {
                    "kind": "annotation",
                    "name": "backward",
                    "start_ns": s + 3_000_000,
                    "end_ns": s + 8_000_000,
                    "step": step,
                },
                {
                    "kind": "step",
                    "name": f"step_{step}",
                    "start_ns": s,
                    "end_ns": s + 9_000_000,
                    "step": step,
                },
            ]
            metrics.append({"name": "train:loss", "value": 1.0 / (step + 1), "step": step, "ts_ns": s})
            step += 1
        for kind, records in (("system", system), ("annotations", annotations), ("metrics", metrics)):
            store.put(place.raw_key(f"{kind}/{seq:06d}.jsonl.gz"), _chunk(records))
            total += len(records)
    store.put(place.raw_key("job.json"), json.dumps({"job": "bench", "start_ns": t0}).encode())
    store.put(place.raw_key(f"torch/{trace.name}"), trace.read_bytes())
    return total


def decode_floor(store: LocalStore, place: JobPlace) -> None:
    for info in store.list(place.raw_prefix):
        data = store.get(info.key)
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        if info.key.endswith(".jsonl.gz"):
            for line in data.splitlines():
                orjson.loads(line)
        elif info.key.endswith((".json", ".json.gz")):
            orjson.loads(data)


CPU: dict[int, float] = {}
"""The best CPU time (this process's) of each timed function, by ``id``: steadier than wall time on
a loaded machine."""


def best(fn: object, repeat: int) -> float:
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    CPU[id(fn)] = min(cpu)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--steps-per-s", type=int, default=10)
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("command:", shlex.join([".venv/bin/python", "benchmarks/bench_ingest.py", *sys.argv[1:]]))
    with tempfile.TemporaryDirectory() as tmp:
        store = LocalStore(Path(tmp) / "store")
        place = JobPlace("bench", "user", "job-1")
        records = write_run(store, place, args.hours, args.steps_per_s, args.trace)
        raw = sum(i.size for i in store.list(place.raw_prefix))
        ctx = IngestContext(
            sessions=None,
            store=store,
            max_file_bytes=1 << 31,  # type: ignore[arg-type]
            max_trace_bytes=1 << 31,
            stale_after=timedelta(minutes=15),
        )

        def ingest() -> None:
            store.delete_prefix(place.processed_prefix)  # as a run of ingest starts
            job = {"name": "bench", "metric_definitions": []}
            build_summary(
                ctx, place, job, lambda f, s, entry, notes: put_trace(store, place, f, s, entry, notes)
            )

        floor = best(lambda: decode_floor(store, place), args.repeat)
        trace_only = best(lambda: analyze_file(args.trace), args.repeat)
        ours = best(ingest, args.repeat)
        processed = list(store.list(place.processed_prefix))
    written = sum(i.size for i in processed)
    size = f"{raw / 2**20:.1f} MiB"
    print(f"run: {args.hours} h, {records:,} SDK records in {size} of raw files + {args.trace.name}")
    print(f"{'decode floor':<14}{floor:8.2f} s   (1.00x)")
    print(f"{'trace only':<14}{trace_only:8.2f} s   ({trace_only / floor:.2f}x)")
    cpu = CPU[id(ingest)]
    print(f"{'ingest':<14}{ours:8.2f} s   ({ours / floor:.2f}x of the decode floor; {cpu:.2f} s CPU)")
    parquet = [i for i in processed if i.key.endswith(".parquet")]
    print(f"processed/    {len(processed)} objects, {written / 2**20:.2f} MiB", end="")
    print(f" (of which Parquet: {len(parquet)} objects, {sum(i.size for i in parquet) / 2**20:.2f} MiB)")


if __name__ == "__main__":
    main()
