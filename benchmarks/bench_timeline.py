"""Timeline level of detail at scale: index build and window queries over ~10 million events.

The trace is built by repeating the steps of a real PyTorch-profiler sample
(``../shared/traces/torch-cpu/mlp_cpu_10steps.pt.trace.json``, read with ``load_trace``) until it
holds ``--events`` events; its ``[memory]`` counters repeat with it. The script times
``TimelineIndex.build`` and ``window()`` at several zoom levels, each at random pan positions, and
prints median and p95 per zoom against the goal "median under 50 ms whatever the zoom".

With ``--ingest`` it also writes the same trace as a Kineto JSON file (the sample's own event
records, args included, repeated with new timestamps) and, in a fresh process, reads it with the
analysis reader (``load_trace``), builds the timeline index and answers a full-range window,
reporting time and peak RSS: does a 10-million-event trace fit this machine?

Times are wall clock and, in brackets, CPU time of this process: on a shared machine the CPU time
is what the work costs, the wall time what it cost while others competed for the cores (the load
average is printed). The goal is judged on the CPU-time median.

    .venv/bin/python benchmarks/bench_timeline.py [--events 10000000] [--lanes 1] [--width 2000]
        [--queries 40] [--ingest] [--json-path /tmp/profilerhub-bench-10M.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from profilerhub_analysis.build import load_trace
from profilerhub_analysis.store import EventStore
from profilerhub_analysis.timeline import TimelineIndex

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT.parent / "shared" / "traces" / "torch-cpu" / "mlp_cpu_10steps.pt.trace.json"
GOAL_MS = 50.0
STEP_NAMES = ("train_step",)


class Clock:
    """Wall and CPU seconds of one timed block."""

    def __enter__(self) -> Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ms(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000, q))


# -- the trace --------------------------------------------------------------------------------


def sample_cycle(store: EventStore) -> dict[str, Any]:
    """The sample's CPU-thread events from its first step on: one cycle to repeat."""
    names = store.name_list
    lane_kind = store.lane_column("kind")
    thread = int(np.flatnonzero(lane_kind == "cpu_thread")[0])
    on_thread = store.col("lane_id") == thread
    ts, dur = store.col("ts_ns")[on_thread], store.col("dur_ns")[on_thread]
    name_id = store.col("name_id")[on_thread]
    step_ids = [i for i, n in enumerate(names) if n in STEP_NAMES or n.startswith("ProfilerStep#")]
    steps = np.sort(ts[np.isin(name_id, step_ids)])
    start, stop = int(steps[0]), int((ts + dur).max())
    inside = (ts >= start) & (ts < stop)
    counter_names, counter_id = np.unique(store.counter_column("name"), return_inverse=True)
    mem_ts = store.counter_column("ts_ns")
    mem_in = (mem_ts >= start) & (mem_ts < stop)
    return {
        "start": start,
        "length": stop - start,
        "ts": ts[inside] - start,
        "dur": dur[inside],
        "name": name_id[inside],
        "kind": store.col("kind")[on_thread][inside],
        "names": names,
        "mem_id": counter_id[mem_in],
        "mem_ts": mem_ts[mem_in] - start,
        "mem_val": store.counter_column("value")[mem_in],
        "counter_names": [str(n) for n in counter_names],
        "steps": len(steps),
        "step_ns": int(np.median(np.diff(steps))),
    }


def repeat_cycle(cycle: dict[str, Any], events: int, lanes: int) -> dict[str, np.ndarray]:
    """Tile the cycle until ``events`` (split over ``lanes`` copies of the thread)."""
    per_lane = math.ceil(events / lanes)
    reps = math.ceil(per_lane / len(cycle["ts"]))
    offs = np.arange(reps, dtype=np.int64) * cycle["length"]
    ts = (cycle["ts"][None, :] + offs[:, None]).ravel()[:per_lane]
    mem_ts = (cycle["mem_ts"][None, :] + offs[:, None]).ravel()
    keep = mem_ts <= ts[-1]

    def tile(col: np.ndarray) -> np.ndarray:
        return np.tile(np.tile(col, reps)[:per_lane], lanes)[:events]

    return {
        "ts": np.tile(ts, lanes)[:events],
        "dur": tile(cycle["dur"]),
        "name": tile(cycle["name"]),
        "kind": tile(cycle["kind"]),
        "lane": np.repeat(np.arange(lanes, dtype=np.int32), per_lane)[:events],
        "mem_id": np.tile(cycle["mem_id"], reps)[keep],
        "mem_ts": mem_ts[keep],
        "mem_val": np.tile(cycle["mem_val"], reps)[keep],
    }


# -- window queries ---------------------------------------------------------------------------


def run_queries(index: TimelineIndex, width: int, queries: int, step_ns: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    span = index.t_end - index.t_min
    zooms = [
        ("full range", span),
        ("1/10", span // 10),
        ("1/1000", span // 1000),
        ("one step", step_ns),
        ("1 ms", 1_000_000),
        ("1 us", 1_000),
    ]
    print(f"\nwindow({width} px), {queries} random pans per zoom; goal: median < {GOAL_MS:.0f} ms")
    print(
        f"{'zoom':>12} {'median ms (cpu)':>17} {'p95 ms (cpu)':>15} {'items':>6} "
        f"{'to_dict+JSON ms':>16} {'KiB':>6}"
    )
    worst = 0.0

    def row(label: str, wall: list[float], cpu: list[float], extra: str) -> None:
        nonlocal worst
        worst = max(worst, ms(cpu, 50))
        print(
            f"{label:>12} {ms(wall, 50):8.2f} ({ms(cpu, 50):6.2f}) "
            f"{ms(wall, 95):7.2f} ({ms(cpu, 95):6.2f}) {extra}"
        )

    for label, width_ns in zooms:
        wall, cpu, ser, size, items = [], [], [], [], []
        for _ in range(queries):
            t0 = index.t_min + int(rng.integers(0, max(1, span - width_ns + 1)))
            with Clock() as c:
                win = index.window(t0, t0 + width_ns, width)
            wall.append(c.wall)
            cpu.append(c.cpu)
            with Clock() as c:
                payload = orjson.dumps(win.to_dict())
            ser.append(c.cpu)
            size.append(len(payload))
            items.append(sum(lane.items for lane in win.lanes))
        row(label, wall, cpu, f"{int(np.median(items)):6d} {ms(ser, 50):16.2f} {np.median(size) / 1024:6.1f}")

    wall, cpu = [], []
    for _ in range(queries * 5):
        width_ns = int(10 ** rng.uniform(3, math.log10(span)))
        t0 = index.t_min + int(rng.integers(0, max(1, span - width_ns + 1)))
        with Clock() as c:
            index.window(t0, t0 + width_ns, width)
        wall.append(c.wall)
        cpu.append(c.cpu)
    row("random zoom", wall, cpu, f"({len(wall)} windows, widths log-uniform from 1 us to the full range)")
    return worst


# -- ingest of the same trace as a JSON file ----------------------------------------------------


def write_trace_json(path: Path, events: int) -> tuple[int, int]:
    """The sample's thread events and memory instants, repeated, as a Kineto JSON file."""
    doc = orjson.loads(SAMPLE.read_bytes())
    records = doc["traceEvents"]
    x = [e for e in records if e.get("ph") == "X" and isinstance(e.get("tid"), int)]
    steps = sorted(e["ts"] for e in x if e["name"] in STEP_NAMES)
    start = steps[0]
    stop = max(e["ts"] + e["dur"] for e in x)
    mem = [e for e in records if e.get("ph") == "i" and e.get("name") == "[memory]"]
    cycle = sorted((e for e in x + mem if start <= e["ts"] < stop), key=lambda e: (e["ts"], -e.get("dur", 0)))
    # Each record as bytes around its timestamp, so a repetition only formats numbers.
    parts = []
    for e in cycle:
        head, tail = orjson.dumps({**e, "ts": "@TS@"}).split(b'"@TS@"')
        parts.append((head, tail, e["ts"] - start, e.get("ph") == "X"))
    per_cycle = sum(p[3] for p in parts)
    reps = math.ceil(events / per_cycle)
    length = stop - start
    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    written = 0
    with path.open("wb") as fh:
        fh.write(orjson.dumps(header)[:-1] + b',"traceEvents":[')
        first = True
        for rep in range(reps):
            base = start + rep * length
            chunk = []
            for head, tail, rel, is_x in parts:
                if is_x:
                    if written == events:
                        break
                    written += 1
                chunk.append(head + f"{base + rel:.3f}".encode() + tail)
            if chunk:
                fh.write((b"" if first else b",") + b",".join(chunk))
                first = False
        fh.write(b"]}")
    return written, path.stat().st_size


INGEST_CHILD = """
import json, resource, sys, time
t = time.perf_counter(); c = time.process_time()
from profilerhub_analysis.build import load_trace
from profilerhub_analysis.timeline import TimelineIndex
store = load_trace(sys.argv[1], max_bytes=int(sys.argv[2]))
t1 = time.perf_counter(); c1 = time.process_time()
rss_store = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
index = TimelineIndex.from_store(store)
t2 = time.perf_counter(); c2 = time.process_time()
win = index.window(index.t_min, index.t_end + 1, 2000)
t3 = time.perf_counter()
print(json.dumps({"events": len(store), "counters": len(index.counters or ()),
    "load_s": t1 - t, "load_cpu_s": c1 - c, "index_s": t2 - t1, "index_cpu_s": c2 - c1,
    "window_ms": (t3 - t2) * 1000, "items": sum(l.items for l in win.lanes),
    "rss_after_load_mib": rss_store / 1024,
    "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_ingest(path: Path, events: int) -> None:
    with Clock() as c:
        written, size = write_trace_json(path, events)
    print(
        f"\ningest: wrote {written:,} X events (+ memory instants) as {size / 2**30:.2f} GiB JSON to {path} "
        f"in {c.wall:.0f} s"
    )
    cmd = [sys.executable, "-c", INGEST_CHILD, str(path), str(size + 1)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"ingest child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        return
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    print(
        f"  load_trace: {r['events']:,} events, {r['counters']:,} counter samples in {r['load_s']:.1f} s "
        f"(cpu {r['load_cpu_s']:.1f} s); peak RSS so far {r['rss_after_load_mib']:,.0f} MiB\n"
        f"  TimelineIndex.from_store: {r['index_s']:.1f} s (cpu {r['index_cpu_s']:.1f} s); "
        f"full-range window {r['window_ms']:.1f} ms, {r['items']} items\n"
        f"  peak RSS of the whole run: {r['peak_rss_mib']:,.0f} MiB of {total:.0f} GiB on this machine"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--lanes", type=int, default=1, help="copies of the thread, events split evenly")
    ap.add_argument("--width", type=int, default=2000, help="window width in pixels")
    ap.add_argument("--queries", type=int, default=40, help="random pans per zoom level")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ingest", action="store_true", help="also write the trace as JSON and ingest it")
    ap.add_argument("--json-path", type=Path, default=Path("/tmp/profilerhub-bench-10M.json"))
    ap.add_argument("--keep-json", action="store_true", help="keep the JSON file afterwards")
    args = ap.parse_args()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")

    with Clock() as c:
        cycle = sample_cycle(load_trace(SAMPLE))
        trace = repeat_cycle(cycle, args.events, args.lanes)
    print(
        f"trace: {len(trace['ts']):,} events on {args.lanes} lane(s), "
        f"{len(trace['mem_ts']):,} counter samples, "
        f"from {SAMPLE.name} ({len(cycle['ts'])} events in {cycle['steps']} steps) in {c.wall:.1f} s"
    )
    rss_before = peak_rss_mib()
    with Clock() as c:
        index = TimelineIndex.build(
            trace["ts"],
            trace["dur"],
            trace["lane"],
            trace["name"],
            cycle["names"],
            trace["kind"],
            counters=(trace["mem_id"], trace["mem_ts"], trace["mem_val"]),
            counter_names=cycle["counter_names"],
        )
    print(
        f"index build: {c.wall:.2f} s (cpu {c.cpu:.2f} s); {len(index.lane_ids)} lane(s), "
        f"{index.lane_depth(int(index.lane_ids[0]))} rows deep, {index.overlaps_left} overlaps left; "
        f"trace span {(index.t_end - index.t_min) / 1e9:,.0f} s; index holds {index.nbytes / 2**20:,.0f} MiB "
        f"({index.nbytes / len(trace['ts']):.0f} B/event, counters included); peak RSS "
        f"{rss_before:,.0f} MiB before the build, {peak_rss_mib():,.0f} MiB after"
    )
    worst = run_queries(index, args.width, args.queries, cycle["step_ns"], args.seed)
    verdict = "MET" if worst < GOAL_MS else "MISSED"
    print(
        f"\nworst median (cpu) {worst:.2f} ms vs goal {GOAL_MS:.0f} ms: {verdict}; "
        f"peak RSS {peak_rss_mib():,.0f} MiB"
    )

    if args.ingest:
        del index, trace
        try:
            run_ingest(args.json_path, args.events)
        finally:
            if not args.keep_json:
                args.json_path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
