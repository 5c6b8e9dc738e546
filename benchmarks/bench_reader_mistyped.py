#!/usr/bin/env python3
"""A trace with a mistyped field parses at the rate of its clean twin (issue 25: a string
``args.bytes`` in one event used to send a whole document down the per-event path, 10x slower).

Tiles the real CPU trace to ``--mib`` MiB of JSON (in memory), then makes twins of it: clean, and
with ``--bad`` events (spread through the document, one alone in the middle) mistyped two ways:
``args.bytes`` a string that is no number (the decoder takes it; it costs that field), and
``name`` a number (the typed decoder refuses the event; it costs that event, decoded alone the
slow way). Prints, per twin, the best of ``--repeat`` runs of ``parse_trace`` (decode + columns: what
ingest does with a trace) as MB/s of JSON, the events that took the lenient path, and the ratio of
each twin's time to the clean one's. Goal: the ratio near 1.

Usage:
  .venv/bin/python benchmarks/bench_reader_mistyped.py [--mib 64 256] [--bad 1 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

from profilerhub_analysis.build import build_store
from profilerhub_analysis.reader import decode

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT.parent / "shared/traces/torch-cpu/mlp_cpu_10steps.pt.trace.json"


def tiled_events(mib: float) -> list[dict[str, object]]:
    """The real trace's events repeated (shifted in time) until their JSON is about ``mib`` MiB."""
    events = json.loads(TRACE.read_text())["traceEvents"]
    one = len(json.dumps(events))
    span = max(float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in events) + 1000
    copies = max(1, int(mib * 2**20 / one))
    return [
        {**event, "ts": float(event["ts"]) + copy * span} if "ts" in event else event
        for copy in range(copies)
        for event in events
    ]


def mistyped(events: list[dict[str, object]], bad: int, how: str = "text") -> bytes:
    """The document with ``bad`` X events (evenly spread) mistyped: ``text`` gives them
    ``"args": {"bytes": "n/a"}``, ``refused`` a numeric ``name``."""
    spots = [i for i, e in enumerate(events) if e.get("ph") == "X"]
    chosen = {spots[int((k + 0.5) * len(spots) / bad)] for k in range(bad)}  # one alone: the middle

    def spoilt(e: dict[str, object]) -> dict[str, object]:
        if how == "refused":
            return {**e, "name": 5}
        return {**e, "args": {**dict(e.get("args") or {}), "bytes": "n/a"}}  # type: ignore[call-overload]

    out = [spoilt(e) if i in chosen else e for i, e in enumerate(events)]
    return json.dumps({"schemaVersion": 1, "traceEvents": out}).encode()


def timed(data: bytes, repeat: int) -> tuple[float, int]:
    """(best seconds of decode + build_store, what ``parse_trace`` does; events that took the
    lenient path)."""
    best, lenient = float("inf"), -1
    for _ in range(repeat):
        start = time.perf_counter()
        decoded = decode(data)
        build_store(decoded)  # consumes the batches (the large-document path decodes them here)
        best = min(best, time.perf_counter() - start)
        lenient = getattr(decoded, "lenient_events", -1)  # -1: a reader that does not count them
    return best, lenient


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, nargs="+", default=[64.0])
    parser.add_argument("--bad", type=int, nargs="+", default=[1, 100])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    print("goal: every mistyped twin within ~1.2x of the clean one's time (it was ~10x)")
    for mib in args.mib:
        events = tiled_events(mib)
        clean = json.dumps({"schemaVersion": 1, "traceEvents": events}).encode()
        base, _ = timed(clean, args.repeat)
        size = len(clean) / 1e6
        print(
            f"{len(clean) / 2**20:.0f} MiB, {len(events)} events: clean {size / base:.0f} MB/s ({base:.2f} s)"
        )
        for how in ("text", "refused"):
            for bad in args.bad:
                seconds, lenient = timed(mistyped(events, bad, how), args.repeat)
                print(
                    f"  {bad} {how}: {size / seconds:.0f} MB/s ({seconds:.2f} s), {lenient} events lenient, "
                    f"ratio {seconds / base:.2f}"
                )


if __name__ == "__main__":
    main()
