"""A large trace with mistyped fields parses at the rate of its clean twin, through the reader
ingest runs (``build.load_trace``, the streamed one): a string ``args.bytes`` (as in a real MI300X
trace, which used to send the whole document down the per-event path, 10x slower) costs nothing
but that field, and an event the typed decoder refuses is the only one decoded the slow way.

The rate is compared without a clock that load can break: the lenient path's events are counted,
and the two twins' CPU time (``time.process_time``, this process alone) is compared in the same
process with a generous bound; ``benchmarks/bench_reader_mistyped.py`` prints the rates."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import pytest

import profilerhub_analysis.reader as reader_module
from profilerhub_analysis.build import load_trace

TRACE = "traces/torch-cpu/mlp_cpu_10steps.pt.trace.json"
COPIES = 90  # about 200,000 events, 60 MB of JSON


def _twins(shared_dir: Path, tmp_path: Path) -> tuple[Path, Path, int]:
    """The real CPU trace tiled ``COPIES`` times (shifted in time), clean and mistyped; the events."""
    doc = json.loads((shared_dir / TRACE).read_text())
    events = doc["traceEvents"]
    span = max(float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in events) + 1000
    tiled = [
        {**e, "ts": float(e["ts"]) + copy * span} if "ts" in e else e
        for copy in range(COPIES)
        for e in events
    ]
    xs = [i for i, e in enumerate(tiled) if e.get("ph") == "X"]
    bad = list(tiled)
    for i in xs[len(xs) // 4 :: len(xs) // 3][:3]:  # three spread out: a number as text
        bad[i] = {**bad[i], "args": {**(bad[i].get("args") or {}), "bytes": "n/a"}}
    middle = xs[len(xs) // 2]
    bad[middle] = {**bad[middle], "name": 5}  # one the typed decoder refuses
    paths = []
    for name, body in (("clean", tiled), ("mistyped", bad)):
        path = tmp_path / f"{name}.pt.trace.json.gz"
        path.write_bytes(gzip.compress(json.dumps({**doc, "traceEvents": body}).encode(), 1))
        paths.append(path)
    return paths[0], paths[1], len(tiled)


def _cpu_of_load(path: Path) -> tuple[float, Any]:
    start = time.process_time()
    store = load_trace(path)
    return time.process_time() - start, store


def test_a_large_trace_with_mistyped_fields_parses_at_its_clean_twins_rate(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean, mistyped, total = _twins(shared_dir, tmp_path)
    slow: list[int] = []
    real = reader_module._convert_leniently

    def counting(raw_events: list[Any], *args: Any) -> Any:
        slow.append(len(raw_events))
        return real(raw_events, *args)

    monkeypatch.setattr(reader_module, "_convert_leniently", counting)
    load_trace(clean)  # warm: imports, decoders, first allocations
    clean_cpu, clean_store = min((_cpu_of_load(clean) for _ in range(2)), key=lambda r: r[0])
    assert slow == []
    bad_cpu, bad_store = min((_cpu_of_load(mistyped) for _ in range(2)), key=lambda r: r[0])
    assert sum(slow) == 2  # the refused event, once per load: nothing else took the per-event path
    assert bad_store.meta.events_total == clean_store.meta.events_total == total
    assert bad_store.meta.skipped == {"malformed event": 1} and len(bad_store) == len(clean_store) - 1
    ratio = bad_cpu / clean_cpu
    print(f"{total} events: clean {clean_cpu:.2f} CPU-s, mistyped {bad_cpu:.2f} CPU-s, ratio {ratio:.2f}")
    assert ratio < 3, (
        f"the mistyped twin took {ratio:.1f}x the clean one's CPU time (the per-event path is 10x)"
    )
