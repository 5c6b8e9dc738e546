#!/usr/bin/env python3
"""Trace size against parse time and peak memory: the streamed reader beside today's whole-document one.

Builds traces of growing size by re-timing the real CPU trace (``../shared/traces/torch-cpu/
mlp_cpu_10steps.pt.trace.json``: its events repeated, each copy shifted past the last), written
straight to a temporary file (gzipped unless ``--plain``; never in memory whole, never committed).
Each size is parsed in a fresh process, each way, so that one's peak RSS is its own:

* ``streamed``: ``build.load_trace`` (what ingest runs): the document read as a stream
  (``profilerhub_analysis.stream``), columns built slice by slice;
* ``anchor``: today's whole-document parse, ``parse_trace(read_bytes(path))``: the document in
  memory, then decoded (in batches past 256 MiB);
* ``floor``: gunzip alone (``file_chunks`` drained), what no parser can beat;
* ``tokenize``: gunzip + msgspec tokenizing the document into one raw slice per event
  (a ``traceEvents: list[msgspec.Raw]`` struct: every byte scanned, no object built per field),
  the floor of a fast JSON tokenizer;
* ``orjson``: gunzip + ``orjson.loads`` of the whole document (a fast JSON decoder building every
  event's dict, no columns; up to ``--anchor-max`` events: it holds the document);
* ``ingest``: what a worker does with one trace (``--ingest-max`` events at most): the streamed
  reader, the summary entry, the dashboard panels and timeline (``views.put_trace``) and the
  TensorBoard views (``views.put_tb_views``), into a local store in a temporary folder.

Prints per size and way: events, MB of decompressed JSON, seconds, events/s, MB/s, MB of
decompressed trace per CPU-second (per core: the child's own CPU time), that rate against the two
floors' in the same run, peak RSS (MiB, ``ru_maxrss`` of the child) and the RSS above the
interpreter's own (the same child before parsing); then a summary line per way of the largest size
beside the issue's goal (100 MB/s per core).

``--workers 1 2`` then ingests a job of ``--ranks`` traces of ``--rank-events`` events each through
real ingest workers (``profilerhub worker --queues ingest --concurrency 1`` processes, beside a hub
on SQLite and a Redis: ``bench_apps.Stack``), once per worker count, uploading through the hub's
API and timing ``complete`` to ``Ready``; it prints the wall time, the workers' CPU time per GB, the
speed-up of each count over the first, and each worker's CPU seconds (that every worker took part).

The streamed reader's peak should grow by the store's columns alone (about 70 bytes per event
kept), the anchor's by about twice the document.

Usage:
  .venv/bin/python benchmarks/bench_ingest_scale.py [--events 250000 500000 1000000 2000000]
      [--plain] [--anchor-max 2000000] [--tmp DIR] [--workers 1 2 --ranks 4 --rank-events 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support.retimed
from tests.support.retimed import SOURCE, write_retimed  # noqa: E402

TRACE = ROOT.parent / "shared" / SOURCE

CHILD = r"""
import json, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
import numpy, msgspec
from profilerhub_analysis.build import load_trace, parse_trace
from profilerhub_analysis.reader import read_bytes
from profilerhub_analysis.reader import file_chunks
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
if mode == "streamed":
    n = load_trace(path, max_bytes=1 << 62).meta.events_total
elif mode == "ingest":
    import tempfile
    from pathlib import Path
    from profilerhub_core.jobstorage import JobPlace
    from profilerhub_core.storage import LocalStore
    from profilerhub_worker.ingest import summary as sm
    from profilerhub_worker.ingest.views import put_tb_views, put_trace
    with tempfile.TemporaryDirectory() as tmp:
        store, place = LocalStore(Path(tmp)), JobPlace("d", "u", "j")
        events = load_trace(path, max_bytes=1 << 62)
        n = events.meta.events_total
        entry = sm.trace_summary("trace", events)
        put_trace(store, place, "traces/0-trace", events, entry)
        del events
        put_tb_views(store, place, "traces/0-trace", entry, Path(path), 1 << 62)
elif mode == "anchor":
    n = parse_trace(read_bytes(path, max_bytes=1 << 62)).meta.events_total
elif mode == "tokenize":
    class Doc(msgspec.Struct):
        traceEvents: list[msgspec.Raw] = []
    n = len(msgspec.json.decode(b"".join(file_chunks(path, max_bytes=1 << 62)), type=Doc).traceEvents)
elif mode == "orjson":
    import orjson
    n = len(orjson.loads(b"".join(file_chunks(path, max_bytes=1 << 62)))["traceEvents"])
else:
    n = sum(len(c) for c in file_chunks(path, max_bytes=1 << 62)) and 0
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"n": n, "wall": wall, "cpu": cpu, "peak_kib": peak, "base_kib": base}))
"""


def write_trace(path: Path, events: int, plain: bool) -> int:
    """Write a trace of about ``events`` events (the real trace re-timed); its decompressed bytes."""
    return write_retimed(TRACE, path, events, plain)


def run_child(mode: str, path: Path, child: str = CHILD, pythonpath: str | None = None) -> dict[str, Any]:
    """Run ``child`` (``CHILD``: a way of reading ``path``) in a fresh interpreter; its last line's
    JSON, or ``{"error": ...}``. ``pythonpath`` goes first on the child's path (other code)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [sys.executable, "-c", child, mode, str(path)], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[250_000, 500_000, 1_000_000, 2_000_000])
    parser.add_argument("--plain", action="store_true", help="write plain JSON instead of gzip")
    parser.add_argument("--anchor-max", type=int, default=2_000_000, help="no anchor run above this size")
    parser.add_argument("--ingest-max", type=int, default=1_000_000, help="no ingest run above this size")
    parser.add_argument("--tmp", default=None, help="where the generated traces go (deleted after)")
    parser.add_argument(
        "--workers", type=int, nargs="*", default=[], help="ingest worker counts to run a job with"
    )
    parser.add_argument("--ranks", type=int, default=4, help="traces of the workers' job")
    parser.add_argument("--rank-events", type=int, default=200_000, help="events of each of its traces")
    args = parser.parse_args()
    if not TRACE.exists():
        print(f"the real trace is not at {TRACE} (the shared checkout next to the repo)", file=sys.stderr)
        return 2
    print("command:", shlex.join([Path(sys.executable).name, *sys.argv]))
    form = "plain JSON" if args.plain else "gzip level 1"
    print(f"source: {TRACE.name} re-timed; {form}; one process per run")
    head = (
        "events",
        "way",
        "JSON MB",
        "s",
        "Mev/s",
        "MB/s",
        "MB/cpu-s",
        "/gunzip",
        "/tokens",
        "peak MiB",
        "+MiB",
    )
    print("{:>10} {:>9} {:>8} {:>7} {:>6} {:>6} {:>8} {:>7} {:>7} {:>9} {:>7}".format(*head))
    per_core: dict[str, float] = {}  # way -> MB per CPU-second, of the latest size it ran at
    with tempfile.TemporaryDirectory(prefix="bench-ingest-scale-", dir=args.tmp) as tmp:
        for events in args.events:
            path = Path(tmp) / f"trace-{events}.json{'' if args.plain else '.gz'}"
            t0 = time.perf_counter()
            size = write_trace(path, events, args.plain)
            made = time.perf_counter() - t0
            rates: dict[str, float] = {}  # this size's
            ways = ["floor"] + (["tokenize", "orjson"] if events <= args.anchor_max else []) + ["streamed"]
            ways += ["anchor"] if events <= args.anchor_max else []
            ways += ["ingest"] if events <= args.ingest_max else []
            for way in ways:
                r = run_child(way, path)
                if "error" in r:
                    print(f"{events:>10} {way:>9} error: {r['error']}")
                    continue
                n = r["n"] or events
                peak, extra = r["peak_kib"] / 1024, (r["peak_kib"] - r["base_kib"]) / 1024
                rate = rates[way] = per_core[way] = size / 1e6 / max(r["cpu"], 1e-9)
                against = [
                    f"{rate / rates[floor]:>7.2f}" if floor in rates else f"{'-':>7}"
                    for floor in ("floor", "tokenize")
                ]
                print(
                    f"{events:>10} {way:>9} {size / 1e6:>8.0f} {r['wall']:>7.2f} {n / r['wall'] / 1e6:>6.2f} "
                    f"{size / 1e6 / r['wall']:>6.0f} {rate:>8.0f} {' '.join(against)} "
                    f"{peak:>9.0f} {extra:>7.0f}"
                )
            print(f"{'':>10} (written in {made:.1f} s, {path.stat().st_size / 1e6:.0f} MB on disk)")
            path.unlink()
        for way, rate in per_core.items():
            print(f"per core, {way}: {rate:.0f} MB of decompressed trace per CPU-second (goal: >= 100)")
        if args.workers:
            run_workers(args, Path(tmp))
    return 0


def run_workers(args: argparse.Namespace, tmp: Path) -> None:
    """One job of ``args.ranks`` traces through real ingest workers, once per count in ``args.workers``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_apps import Stack, wait_until  # the hub on SQLite and a Redis, as bench_apps runs it

    trace = tmp / "rank.pt.trace.json.gz"
    size = write_trace(trace, args.rank_events, plain=False)
    body = trace.read_bytes()
    total = size * args.ranks
    print(
        f"\nworkers: a job of {args.ranks} traces x {args.rank_events} events "
        f"({size / 1e6:.0f} MB of JSON each, {total / 1e9:.2f} GB in all), ingest workers of one task each"
    )
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(
        "{:>8} {:>8} {:>10} {:>8} {:>9}  {}".format(
            "workers", "wall s", "cpu s/GB", "MB/s", "speed-up", "CPU s of each worker"
        )
    )
    redis_url, embedded = os.environ.get("PROFILERHUB_BENCH_REDIS_URL"), None
    if not redis_url:
        from profilerhub_stack.embedded_redis import EmbeddedRedis

        embedded = EmbeddedRedis(tmp / "redis")
        redis_url = embedded.start()
    first: float | None = None
    try:
        for count in args.workers:
            stack = Stack(tmp / f"stack-{count}", redis_url)
            stack.env["PROFILERHUB_JOB_MAX_TRACE_BYTES"] = str(max(size * 2, 1 << 31))
            stack.env["PROFILERHUB_JOB_MAX_INGEST_BYTES"] = str(max(total * 2, 1 << 33))
            try:
                wall, cpus, _ = ingest_once(stack, wait_until, count, [body] * args.ranks)
                cpu = sum(cpus)
            finally:
                stack.stop()
            first = first or wall
            print(
                f"{count:>8} {wall:>8.1f} {cpu / (total / 1e9):>10.0f} {total / 1e6 / wall:>8.1f} "
                f"{first / wall:>9.2f}  " + " + ".join(f"{c:.1f}" for c in cpus)
            )
    finally:
        if embedded is not None:
            embedded.stop()
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (loaded: noisy)")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def ingest_once(
    stack: Any, wait_until: Any, count: int, bodies: list[bytes]
) -> tuple[float, list[float], str]:
    """Start the hub and ``count`` ingest workers, ingest a one-trace job untimed (the workers'
    first imports and caches), then upload a job of one trace per item of ``bodies`` (gzipped
    Kineto JSON, ``rank_<n>.pt.trace.json.gz``) and time complete -> Ready; the wall time, each
    worker's CPU seconds meanwhile (all of them busy: the traces did fan out) and the job's id.
    The stack is left running (the caller stops it)."""
    import redis

    (stack.root / "home").mkdir(parents=True, exist_ok=True)
    subprocess.run(stack.cli("db", "upgrade"), env=stack.env, check=True, capture_output=True)
    stack.start_hub()
    workers = []
    for i in range(count):
        log = open(stack.root / f"ingest-{i}.log", "ab")  # noqa: SIM115  (closed with the process)
        workers.append(
            subprocess.Popen(
                stack.cli("worker", "--queues", "ingest", "--concurrency", "1"),
                env=stack.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        stack.procs[f"ingest-{i}"] = workers[-1]
    queue = stack.env["PROFILERHUB_CELERY_QUEUE"]
    client = redis.Redis.from_url(stack.env["PROFILERHUB_REDIS_URL"])
    wait_until(lambda: len(list(client.scan_iter(f"{queue}:worker-heartbeat:*"))) >= count, 120, 0.1)
    client.close()
    stack.admin = {"Authorization": f"Bearer {(stack.root / 'home' / 'admin-token').read_text().strip()}"}
    stack.client.post("/api/v1/domains", json={"name": "bench"}, headers=stack.admin).raise_for_status()
    user = stack.user("ranks")
    jobs = "/api/v1/domains/bench/users/ranks/jobs"

    def uploaded(name: str, traces: list[bytes]) -> str:
        job = stack.client.post(jobs, json={"name": name}, headers=user)
        job.raise_for_status()
        job_id = str(job.json()["job_id"])
        for n, body in enumerate(traces):
            put = stack.client.put(
                f"{jobs}/{job_id}/files/torch/rank_{n}.pt.trace.json.gz", content=body, headers=user
            )
            put.raise_for_status()
        return job_id

    def ingested(job_id: str) -> None:
        stack.client.post(f"{jobs}/{job_id}/complete", json={}, headers=user).raise_for_status()

        def ready() -> bool:
            status = stack.client.get(f"{jobs}/{job_id}", headers=user).json()["status"]
            if status == "Failed":
                raise RuntimeError(f"the job failed; see the logs in {stack.root}")
            return bool(status == "Ready")

        wait_until(ready, 3600, 0.2)

    ingested(uploaded("warm-up", bodies[:1]))  # untimed: the workers' first imports and caches
    job_id = uploaded("ranks", bodies)
    cpu0 = [_cpu_seconds(w.pid) for w in workers]
    t0 = time.perf_counter()
    ingested(job_id)
    wall = time.perf_counter() - t0
    return wall, [_cpu_seconds(w.pid) - c for w, c in zip(workers, cpu0, strict=True)], job_id


if __name__ == "__main__":
    raise SystemExit(main())
