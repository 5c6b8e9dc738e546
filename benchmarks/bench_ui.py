"""The profiler app's timeline at scale, engine side: what a pan or zoom step costs the app.

For each size (default 1 M and 10 M events) the trace is built by repeating the steps of a real
PyTorch-profiler sample, as ``bench_timeline.py`` does, into an event store; then

1. ``TraceTimeline.build`` (what ingest does once) and ``to_files`` (what it writes), timed;
2. in a fresh process that imports the profiler app (its idle RSS is the anchor), the saved
   timeline is opened the way the app opens it (memory-mapped, nothing rebuilt), and a scripted
   session of pan and zoom steps at 2000 px asks ``window_bytes`` for each, as the page asks a
   fresh view (a quarter view beyond each side, one column per pixel; a pan next to a cached
   window fetches less, see ``bench_pages.py``): the answer's bytes per step (goal: under 256
   KiB), time per answer, time to open, and the process's RSS with the job
   open (goal: under 1 GiB at 10 M events);
3. a second job of the same size is opened in the same process and browsed too: its RSS cost
   shows whether two jobs open double what they share.

The browser side (first paint, frame times, renderer memory, Perfetto side by side) is measured by
the pages' own benchmark; this script prints the figures the app contributes to it. RSS is split
into private memory (what the process allocated) and mapped trace files (page cache that the
kernel shares between processes and reclaims under pressure).

    .venv/bin/python benchmarks/bench_ui.py [--events 1000000,10000000] [--width 2000] [--steps 60]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_timeline import SAMPLE, Clock, repeat_cycle, sample_cycle  # noqa: E402

from profilerhub_analysis.build import load_trace  # noqa: E402
from profilerhub_analysis.store import EventStore, TraceMeta  # noqa: E402
from profilerhub_analysis.timeline.bundle import TraceTimeline  # noqa: E402

GOAL_BYTES = 256 * 1024
GOAL_RSS_MIB = 1024


def synthetic_store(events: int) -> EventStore:
    """``events`` CPU events (the sample's steps repeated) with its memory counters, as a store."""
    cycle = sample_cycle(load_trace(SAMPLE))
    t = repeat_cycle(cycle, events, 1)
    n = len(t["ts"])
    minus = np.full(n, -1, dtype=np.int64)
    columns = {
        "ts_ns": t["ts"], "dur_ns": t["dur"], "name_id": t["name"], "kind": t["kind"],
        "lane_id": t["lane"], "correlation": minus, "bytes": minus, "stream": minus,
        "device": np.full(n, -1, dtype=np.int32), "launch": minus,
    }  # fmt: skip
    lanes = {
        "kind": np.array(["cpu_thread"], dtype=object), "pid": np.array([1], dtype=np.int64),
        "tid": np.array([1], dtype=np.int64), "device": np.array([-1], dtype=np.int32),
        "name": np.array(["thread 1 (python)"], dtype=object), "sort": np.array([0], dtype=np.int64),
    }  # fmt: skip
    names = np.array(cycle["counter_names"], dtype=object)[t["mem_id"]]
    order = np.lexsort((t["mem_ts"], t["mem_id"]))
    counters = {"name": names[order], "ts_ns": t["mem_ts"][order], "value": t["mem_val"][order]}
    return EventStore(columns, cycle["names"], lanes, counters, TraceMeta(source="bench", events_total=n))


#: Run in a fresh process: import the app, open saved timelines like the app, browse them.
CHILD = r"""
import json, os, sys, time
import numpy as np

def status(key="VmRSS:"):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) / 1024

def rss():
    return status("VmRSS:")
import profilerhub_app.main  # noqa: F401 - what an idle app has loaded
from profilerhub_analysis.timeline.bundle import TraceTimeline
out = {"rss_idle_mib": rss()}
width, steps, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
opened = []  # both jobs stay open, as two tabs of the app would keep them
for label, path in (("first", sys.argv[4]), ("second", sys.argv[5])):
    t0 = time.perf_counter()
    tl = TraceTimeline.open(path)
    opened.append(tl)
    lanes = tl.lanes
    open_s = time.perf_counter() - t0
    span = lanes["t_end"]
    rng = np.random.default_rng(seed)
    sizes, times = [], []
    start, length = 0, span
    for i in range(steps):
        # a session: zoom in 2x for a while, pan, zoom out, jump
        move = i % 6
        if move in (0, 1, 2):
            start, length = start + length // 4, max(length // 2, 1000)
        elif move == 3:
            start += length // 3
        elif move == 4:
            start, length = max(start - length // 2, 0), min(length * 4, span)
        else:
            length = int(10 ** rng.uniform(4, np.log10(span)))
            start = int(rng.integers(0, max(1, span - length)))
        start = min(max(start, 0), max(span - length, 0))
        t1 = time.perf_counter()
        # what the page asks for a view: a quarter view beyond each side, one column per pixel
        body = tl.window_bytes(start - length // 4, start + length + length // 4, width * 3 // 2)
        times.append(time.perf_counter() - t1)
        sizes.append(len(body))
    out[label] = {
        "open_ms": open_s * 1000, "rss_mib": rss(), "events": lanes["events"],
        "bytes_median": float(np.median(sizes)), "bytes_p95": float(np.percentile(sizes, 95)),
        "bytes_max": int(max(sizes)), "ms_median": float(np.median(times) * 1000),
        "ms_p95": float(np.percentile(times, 95) * 1000),
        "anon_mib": status("RssAnon:"), "file_mib": status("RssFile:"),
    }
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec.
out["peak_rss_mib"] = status("VmHWM:")
print(json.dumps(out))
"""


def save(timeline: TraceTimeline, directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    total = 0
    for name, data in timeline.to_files().items():
        (directory / name).write_bytes(data)
        total += len(data)
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--events", default="1000000,10000000", help="comma-separated sizes")
    ap.add_argument("--width", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=60, help="pan/zoom steps per job")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"goals: window answer < {GOAL_BYTES // 1024} KiB per step at {args.width} px; "
          f"app RSS < {GOAL_RSS_MIB} MiB with a 10 M-event job open")  # fmt: skip
    for events in (int(x) for x in args.events.split(",")):
        tmp = Path(tempfile.mkdtemp(prefix="profilerhub-bench-ui-"))
        try:
            with Clock() as c:
                store = synthetic_store(events)
            with Clock() as b:
                timeline = TraceTimeline.build(store, source="bench")
            with Clock() as w:
                size = save(timeline, tmp / "first")
            del timeline, store
            shutil.copytree(tmp / "first", tmp / "second")  # another job: the same size, other files
            print(
                f"\n{events:,} events: store {c.wall:.1f} s; TraceTimeline.build (at ingest) {b.wall:.1f} s "
                f"(cpu {b.cpu:.1f} s); files {size / 2**20:,.0f} MiB written in {w.wall:.1f} s"
            )
            done = subprocess.run(
                [sys.executable, "-c", CHILD, str(args.width), str(args.steps), str(args.seed),
                 str(tmp / "first"), str(tmp / "second")],
                capture_output=True, text=True, timeout=1800,
            )  # fmt: skip
            if done.returncode != 0:
                print("  the app process failed:", done.stderr.strip().splitlines()[-1:])
                return 1
            r = json.loads(done.stdout)
            first, second = r["first"], r["second"]
            print(f"  app process idle (anchor, same run): RSS {r['rss_idle_mib']:,.0f} MiB")
            for label, x, before in (
                ("job 1", first, r["rss_idle_mib"]),
                ("job 2", second, first["rss_mib"]),
            ):
                verdict_b = "MET" if x["bytes_p95"] < GOAL_BYTES else "MISSED"
                print(
                    f"  {label}: opened in {x['open_ms']:.1f} ms; {args.steps} steps at {args.width} px: "
                    f"answer {x['bytes_median'] / 1024:,.1f} KiB median, "
                    f"{x['bytes_p95'] / 1024:,.1f} KiB p95, "
                    f"{x['bytes_max'] / 1024:,.1f} KiB max ({verdict_b}); {x['ms_median']:.1f} ms median, "
                    f"{x['ms_p95']:.1f} ms p95 per answer; RSS {x['rss_mib']:,.0f} MiB "
                    f"(+{x['rss_mib'] - before:,.0f} MiB; private {x['anon_mib']:,.0f} MiB, mapped trace "
                    f"files {x['file_mib']:,.0f} MiB: page cache, shared and reclaimable)"
                )
            verdict = "MET" if first["rss_mib"] < GOAL_RSS_MIB else "MISSED"
            print(
                f"  app RSS with one job open {first['rss_mib']:,.0f} MiB vs goal {GOAL_RSS_MIB} MiB: "
                f"{verdict}; peak {r['peak_rss_mib']:,.0f} MiB"
            )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        time.sleep(0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
