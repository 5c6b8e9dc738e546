#!/usr/bin/env python3
"""How long parsing one large trace holds the GIL: the longest stretch a thread beating every 50 ms
(what the ingest heartbeat is) could not run, beside the whole parse time.

Tiles the real CPU trace to ``--mib`` MiB of JSON (written once to a temporary directory), then
parses it with ``load_trace`` (what ingest does) while a thread records when it gets to run.
The figures bear on ``SLOWEST_PARSE_BYTES_PER_SECOND`` (``profilerhub_worker.ingest.limits``):
while a file is parsed its claim is kept live for ``size / SLOWEST_PARSE_BYTES_PER_SECOND`` seconds,
because the heartbeat thread may not beat at all meanwhile.

Usage:
  .venv/bin/python benchmarks/bench_ingest_gil_hold.py [--mib 100 250 600]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import threading
import time
from pathlib import Path

from profilerhub_analysis.build import load_trace
from profilerhub_worker.ingest.limits import SLOWEST_PARSE_BYTES_PER_SECOND

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT.parent / "shared/traces/torch-cpu/mlp_cpu_10steps.pt.trace.json"


def tiled(path: Path, mib: float) -> None:
    events = json.loads(TRACE.read_text())["traceEvents"]
    span = max(float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in events) + 1000
    target, size, copy = int(mib * 2**20), 0, 0
    with path.open("w") as out:
        out.write('{"schemaVersion": 1, "traceEvents": [')
        while size < target:
            for event in events:
                moved = {**event, "ts": float(event["ts"]) + copy * span} if "ts" in event else event
                text = ("," if size else "") + json.dumps(moved)
                out.write(text)
                size += len(text)
            copy += 1
        out.write("]}")


def longest_hold(path: Path) -> tuple[float, float, int]:
    """(parse seconds, longest gap between the thread's runs, events)."""
    ran: list[float] = []
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(0.05):
            ran.append(time.monotonic())

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    start = time.monotonic()
    store = load_trace(path)
    end = time.monotonic()
    stop.set()
    thread.join()
    marks = [start, *ran, end]
    return end - start, max(b - a for a, b in zip(marks, marks[1:], strict=False)), store.events.num_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, nargs="+", default=[100.0, 250.0])
    args = parser.parse_args()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    floor = SLOWEST_PARSE_BYTES_PER_SECOND / 2**20
    print(f"anchor: SLOWEST_PARSE_BYTES_PER_SECOND = {floor:.0f} MiB/s")
    with tempfile.TemporaryDirectory() as tmp:
        for mib in args.mib:
            path = Path(tmp) / f"trace-{mib:.0f}.json"
            tiled(path, mib)
            size = path.stat().st_size / 2**20
            seconds, hold, events = longest_hold(path)
            print(
                f"{size:7.0f} MiB  {events:>9,} events  parse {seconds:6.1f} s ({size / seconds:5.1f} MiB/s)"
                f"  GIL held at most {hold:5.2f} s  claim kept live {size / floor:6.1f} s"
            )
            path.unlink()


if __name__ == "__main__":
    main()
