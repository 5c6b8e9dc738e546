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
* ``ingest``: what a worker does with one trace (``--ingest-max`` events at most): the streamed
  reader, the summary entry, the dashboard panels and timeline (``views.put_trace``) and the
  TensorBoard views (``views.put_tb_views``), into a local store in a temporary folder.

Prints per size and way: events, MB of decompressed JSON, seconds, events/s, MB/s, peak RSS (MiB,
``ru_maxrss`` of the child) and the RSS above the interpreter's own (the same child before
parsing). The streamed reader's peak should grow by the store's columns alone (about 70 bytes per
event kept), the anchor's by about twice the document.

Usage:
  .venv/bin/python benchmarks/bench_ingest_scale.py [--events 250000 500000 1000000 2000000]
      [--plain] [--anchor-max 2000000] [--tmp DIR]
"""

from __future__ import annotations

import argparse
import gzip
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
TRACE = ROOT.parent / "shared/traces/torch-cpu/mlp_cpu_10steps.pt.trace.json"

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
else:
    n = sum(len(c) for c in file_chunks(path, max_bytes=1 << 62)) and 0
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"n": n, "wall": wall, "cpu": cpu, "peak_kib": peak, "base_kib": base}))
"""


def write_trace(path: Path, events: int, plain: bool) -> int:
    """Write a trace of about ``events`` events (the real trace re-timed); its decompressed bytes."""
    doc = json.loads(TRACE.read_text())
    evs = doc["traceEvents"]
    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    timed = [e for e in evs if isinstance(e.get("ts"), int | float)]
    fixed = [json.dumps(e) for e in evs if not isinstance(e.get("ts"), int | float)]  # metadata: once
    start = min(float(e["ts"]) for e in timed)
    span = float(int(max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed) - start) + 1000)
    # each event's JSON split around its ts, so a copy is only the shifted ts written in between
    templates = [(json.dumps({**e, "ts": 0}).split('"ts": 0', 1), e["ts"]) for e in timed]
    copies = max(1, (events - len(fixed)) // max(len(timed), 1))
    size = 0
    with path.open("wb") if plain else gzip.open(path, "wb", compresslevel=1) as out:

        def put(text: str) -> None:
            nonlocal size
            data = text.encode()
            size += len(data)
            out.write(data)

        put(json.dumps(header)[:-1] + ', "traceEvents": [\n' + ",\n".join(fixed))
        sep = ",\n" if fixed else "\n"
        for copy in range(copies):
            shift = copy * span
            put(sep + ",\n".join(f'{a}"ts": {ts + shift!r}{b}' for (a, b), ts in templates))
            sep = ",\n"
        put("\n]}\n")
    return size


def run_child(mode: str, path: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(path)], capture_output=True, text=True, env=env, check=False
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
    args = parser.parse_args()
    if not TRACE.exists():
        print(f"the real trace is not at {TRACE} (the shared checkout next to the repo)", file=sys.stderr)
        return 2
    print("command:", shlex.join([Path(sys.executable).name, *sys.argv]))
    form = "plain JSON" if args.plain else "gzip level 1"
    print(f"source: {TRACE.name} re-timed; {form}; one process per run")
    head = ("events", "way", "JSON MB", "s", "Mev/s", "MB/s", "peak MiB", "+MiB")
    print("{:>10} {:>9} {:>8} {:>7} {:>6} {:>6} {:>9} {:>7}".format(*head))
    with tempfile.TemporaryDirectory(prefix="bench-ingest-scale-", dir=args.tmp) as tmp:
        for events in args.events:
            path = Path(tmp) / f"trace-{events}.json{'' if args.plain else '.gz'}"
            t0 = time.perf_counter()
            size = write_trace(path, events, args.plain)
            made = time.perf_counter() - t0
            ways = ["floor", "streamed"] + (["anchor"] if events <= args.anchor_max else [])
            ways += ["ingest"] if events <= args.ingest_max else []
            for way in ways:
                r = run_child(way, path)
                if "error" in r:
                    print(f"{events:>10} {way:>9} error: {r['error']}")
                    continue
                n = r["n"] or events
                peak, extra = r["peak_kib"] / 1024, (r["peak_kib"] - r["base_kib"]) / 1024
                print(
                    f"{events:>10} {way:>9} {size / 1e6:>8.0f} {r['wall']:>7.2f} {n / r['wall'] / 1e6:>6.2f} "
                    f"{size / 1e6 / r['wall']:>6.0f} {peak:>9.0f} {extra:>7.0f}"
                )
            print(f"{'':>10} (written in {made:.1f} s, {path.stat().st_size / 1e6:.0f} MB on disk)")
            path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
