"""Timeline level of detail at scale: index build and window queries over ~10 million events.

The trace is built by repeating the steps of a real PyTorch-profiler sample
(``../shared/traces/torch-cpu/mlp_cpu_10steps.pt.trace.json``, parsed here with orjson) until it
holds ``--events`` events; its ``[memory]`` instant events become a counter track. Then it times
``TimelineIndex.build`` and ``window()`` at several zoom levels, each at random pan positions, and
prints median and p95 per zoom against the goal "median under 50 ms whatever the zoom".

    .venv/bin/python benchmarks/bench_timeline.py [--events 10000000] [--lanes 1] [--width 2000]
"""

from __future__ import annotations

import argparse
import gc
import math
import resource
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import orjson

from profilerhub_analysis.timeline import TimelineIndex

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT.parent / "shared" / "traces" / "torch-cpu" / "mlp_cpu_10steps.pt.trace.json"
GOAL_MS = 50.0


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def parse_sample(path: Path) -> dict[str, np.ndarray | list[str]]:
    """The sample's complete events on its CPU thread, its steps and its memory counter, as arrays."""
    doc = orjson.loads(path.read_bytes())
    names: dict[str, int] = {}
    ts, dur, name = [], [], []
    mem_ts, mem_val = [], []
    steps = []
    for ev in doc["traceEvents"]:
        ph = ev.get("ph")
        if ph == "X" and isinstance(ev.get("tid"), int):
            ts.append(ev["ts"])
            dur.append(ev["dur"])
            name.append(names.setdefault(ev["name"], len(names)))
            if ev["name"] == "train_step" or str(ev["name"]).startswith("ProfilerStep#"):
                steps.append(ev["ts"])
        elif ph == "i" and ev.get("name") == "[memory]":
            mem_ts.append(ev["ts"])
            mem_val.append(ev["args"]["Total Allocated"])
    to_ns = lambda v: np.rint(np.asarray(v, dtype=np.float64) * 1000).astype(np.int64)  # noqa: E731
    return {
        "ts": to_ns(ts),
        "dur": to_ns(dur),
        "name": np.asarray(name, dtype=np.int32),
        "names": list(names),
        "steps": to_ns(sorted(steps)),
        "mem_ts": to_ns(mem_ts),
        "mem_val": np.asarray(mem_val, dtype=np.float64),
    }


def repeat_steps(sample: dict, events: int, lanes: int) -> dict[str, np.ndarray]:
    """Tile the sample's steps (each from its start to the next step's start) until ``events``."""
    steps = sample["steps"]
    ts, dur, name = sample["ts"], sample["dur"], sample["name"]
    ts_end = int((ts + dur).max())
    cycle_start, cycle_end = int(steps[0]), ts_end
    inside = (ts >= cycle_start) & (ts < cycle_end)
    order = np.lexsort((-dur[inside], ts[inside]))
    c_ts, c_dur, c_name = ts[inside][order] - cycle_start, dur[inside][order], name[inside][order]
    cycle_len = cycle_end - cycle_start
    per_lane = math.ceil(events / lanes)
    reps = math.ceil(per_lane / len(c_ts))
    offs = np.arange(reps, dtype=np.int64) * cycle_len
    lane_ts = (c_ts[None, :] + offs[:, None]).ravel()[:per_lane]
    lane_dur = np.tile(c_dur, reps)[:per_lane]
    lane_name = np.tile(c_name, reps)[:per_lane]
    m_inside = (sample["mem_ts"] >= cycle_start) & (sample["mem_ts"] < cycle_end)
    m_ts = sample["mem_ts"][m_inside] - cycle_start
    m_val = sample["mem_val"][m_inside]
    mem_ts = (m_ts[None, :] + offs[:, None]).ravel()
    mem_val = np.tile(m_val, reps)
    keep = mem_ts <= lane_ts[-1]
    return {
        "ts": np.tile(lane_ts, lanes)[:events],
        "dur": np.tile(lane_dur, lanes)[:events],
        "lane": np.repeat(np.arange(lanes, dtype=np.int32), per_lane)[:events],
        "name": np.tile(lane_name, lanes)[:events],
        "mem_ts": mem_ts[keep],
        "mem_val": mem_val[keep],
        "step_ns": np.diff(steps).astype(np.int64),
    }


def percentile_ms(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000, q))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--lanes", type=int, default=1, help="copies of the thread, events split evenly")
    ap.add_argument("--width", type=int, default=2000, help="window width in pixels")
    ap.add_argument("--queries", type=int, default=40, help="random pans per zoom level")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("command:", shlex.join([sys.executable, *sys.argv]))

    t = time.perf_counter()
    sample = parse_sample(SAMPLE)
    trace = repeat_steps(sample, args.events, args.lanes)
    print(
        f"trace: {len(trace['ts']):,} events on {args.lanes} lane(s), {len(trace['mem_ts']):,} counter "
        f"samples, built in {time.perf_counter() - t:.1f} s from {SAMPLE.name} "
        f"({len(sample['ts'])} events, {len(sample['steps'])} steps)"
    )
    gc.collect()
    rss_before = peak_rss_mib()

    t = time.perf_counter()
    index = TimelineIndex.build(
        trace["ts"],
        trace["dur"],
        trace["lane"],
        trace["name"],
        sample["names"],
        counters=(np.zeros(len(trace["mem_ts"]), dtype=np.int32), trace["mem_ts"], trace["mem_val"]),
        counter_names=["memory allocated (cpu)"],
    )
    build_s = time.perf_counter() - t
    span = index.t_end - index.t_min
    print(
        f"index build: {build_s:.2f} s; lanes {len(index.lane_ids)}, rows (depth) "
        f"{index.lane_depth(int(index.lane_ids[0]))}, overlaps left {index.overlaps_left}; "
        f"trace span {span / 1e9:.1f} s; peak RSS {rss_before:,.0f} MiB before build, "
        f"{peak_rss_mib():,.0f} MiB after"
    )

    rng = np.random.default_rng(args.seed)
    step = int(np.median(trace["step_ns"]))
    zooms = [
        ("full range", span),
        ("1/10", span // 10),
        ("1/1000", span // 1000),
        ("one step", step),
        ("1 ms", 1_000_000),
        ("1 us", 1_000),
    ]
    print(f"\nwindow({args.width} px), {args.queries} random pans per zoom; goal: median < {GOAL_MS:.0f} ms")
    print(
        f"{'zoom':>12} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'items':>8} "
        f"{'to_dict+json ms':>16} {'JSON KiB':>9}"
    )
    worst_median = 0.0
    for label, width_ns in zooms:
        times, ser, sizes, items = [], [], [], []
        for _ in range(args.queries):
            t0 = index.t_min + int(rng.integers(0, max(1, span - width_ns + 1)))
            t = time.perf_counter()
            win = index.window(t0, t0 + width_ns, args.width)
            times.append(time.perf_counter() - t)
            t = time.perf_counter()
            payload = orjson.dumps(win.to_dict())
            ser.append(time.perf_counter() - t)
            sizes.append(len(payload))
            items.append(sum(lane.items for lane in win.lanes))
        med = percentile_ms(times, 50)
        worst_median = max(worst_median, med)
        print(
            f"{label:>12} {med:10.2f} {percentile_ms(times, 95):8.2f} {max(times) * 1000:8.2f} "
            f"{int(np.median(items)):8d} {percentile_ms(ser, 50):16.2f} {np.median(sizes) / 1024:9.1f}"
        )

    pans = []
    for _ in range(args.queries * 5):
        width_ns = int(10 ** rng.uniform(3, math.log10(span)))
        t0 = index.t_min + int(rng.integers(0, max(1, span - width_ns + 1)))
        t = time.perf_counter()
        index.window(t0, t0 + width_ns, args.width)
        pans.append(time.perf_counter() - t)
    med = percentile_ms(pans, 50)
    worst_median = max(worst_median, med)
    print(
        f"{'random zoom':>12} {med:10.2f} {percentile_ms(pans, 95):8.2f} {max(pans) * 1000:8.2f}"
        f"   ({len(pans)} windows, widths log-uniform 1 us .. full range)"
    )
    print(
        f"\nworst median {worst_median:.2f} ms vs goal {GOAL_MS:.0f} ms: "
        f"{'MET' if worst_median < GOAL_MS else 'MISSED'}; peak RSS {peak_rss_mib():,.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
