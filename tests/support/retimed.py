"""Large traces made of a real one: the shared CPU trace repeated, each copy shifted in time.

What the ingest benchmarks and the memory test feed a worker: a trace of any number of events
that reads like the real one (same names, threads and nesting, one more step per copy), written
as a stream (a copy is its events' JSON with only the shifted ``ts`` written in), so making a
3 GB trace never holds it in memory.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

#: The real trace repeated (relative to the shared folder beside the repository).
SOURCE = "traces/torch-cpu/mlp_cpu_10steps.pt.trace.json"


def write_retimed(source: Path, path: Path, events: int, plain: bool = False) -> int:
    """Write to ``path`` a trace of about ``events`` events: ``source`` re-timed (gzip level 1
    unless ``plain``); its decompressed bytes."""
    doc = json.loads(source.read_text())
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


__all__ = ["SOURCE", "write_retimed"]
