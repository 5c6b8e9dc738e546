#!/usr/bin/env python3
"""One trace's ingest at growing sizes: peak RSS after each phase, time, and what the worker reserves.

Builds traces of N events by re-timing the real CPU trace (``bench_ingest_scale.write_trace``:
``../shared/traces/torch-cpu/mlp_cpu_10steps.pt.trace.json`` repeated, gzip level 1, in a
temporary folder, deleted after) and ingests each in a fresh process exactly as a worker ingests
one trace (``ingest.read.read_trace``'s body): the streamed reader (``build.load_trace``), the
summary entry, the dashboard panels and timeline index (``views.put_trace``), then the TensorBoard
plugin's views (``views.put_tb_views``: ``tbviews`` over the file read again as a stream), into a
local store. The child reports its peak RSS (``ru_maxrss``) after each phase, and this process
samples the child's ``RssAnon`` and ``RssFile`` (``/proc/<pid>/status``) every 10 ms, naming
each sample by the phase running, so the phase that sets the peak is visible. The bound is on
anonymous memory: a large trace's columns and timeline index are file-backed (``scratch``),
page cache the kernel drops under pressure, so RSS may exceed a limit that anon stays under;
``--cgroup-mib N`` (root; cgroup v1 ``memory.limit_in_bytes`` or v2 ``memory.max``) proves it by
running each ingest, before and after, in a memory cgroup of N MiB, where one over it is killed.
The anchor in the same run is gunzip alone (``file_chunks`` drained), what no ingest can beat.
With ``--before DIR`` (a checkout of an earlier commit, e.g.
``git worktree add /tmp/before 15d1bf3``) the same ingest also runs on that code (its ``services``
and ``workers`` first on ``PYTHONPATH``), up to ``--before-max`` events: before and after, same run.

Prints per size: decompressed MB, the floor's and the ingest's MB/s (wall) and MB per CPU-second,
peak RSS after each phase, peak anon per phase and overall, peak file-backed RSS, the anon peak
over the decompressed size (the factor the worker's memory reservation needs,
``ingest.limits.PARSE_MEMORY_FACTOR``, printed beside it) and the bytes per event the anon peak
grows by from one size to the next. Goal (issue 25): peak memory of one trace's ingest under
1 GiB whatever the size; each size's anon peak is judged against it. The ingest runs inside
``ingest.memory.trace_memory(--budget-mib)`` as a worker's does (its scratch pages let go past the
budget less an eighth), and "task MiB" is the peak RSS that the task itself measures and logs
(the kernel's high-water mark since the trace started: anon and file-backed pages).

    .venv/bin/python benchmarks/bench_ingest_memory.py [--events 1000000 4000000 10000000] [--tmp DIR]
        [--before DIR] [--before-max 1000000] [--cgroup-mib 290] [--budget-mib 1024]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ingest_scale import TRACE, write_trace  # noqa: E402

GOAL_BYTES = 1 << 30
SAMPLE_S = 0.01

CHILD = r"""
import json, resource, sys, tempfile, time
from pathlib import Path
mode, path, budget = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
from profilerhub_analysis.build import load_trace
from profilerhub_analysis.reader import file_chunks
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.storage import LocalStore
from profilerhub_worker.ingest import summary as sm
from profilerhub_worker.ingest.views import put_tb_views, put_trace
try:
    from profilerhub_worker.ingest.memory import trace_memory
    from profilerhub_analysis.scratch import trim_heap
except ImportError:  # --before: code from before the per-trace budget
    trace_memory, trim_heap = None, lambda: None
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
def phase(name):  # the parent samples RssAnon and names each sample by the phase running
    print("phase", name, flush=True)
out = {"base_mib": rss()}
phase("reader")
t0, c0 = time.perf_counter(), time.process_time()
if mode == "floor":
    out["bytes"] = sum(len(c) for c in file_chunks(path, max_bytes=1 << 62))
else:
    import contextlib
    budgeted = trace_memory(budget) if trace_memory else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as tmp, budgeted as measured:  # as read_trace does
        store, place = LocalStore(Path(tmp)), JobPlace("d", "u", "j")
        events = load_trace(path, max_bytes=1 << 62)
        out["events"] = events.meta.events_total
        out["reader_mib"] = rss()
        trim_heap()
        phase("dashboard")
        entry = sm.trace_summary("trace", events)
        put_trace(store, place, "traces/0-trace", events, entry)
        out["dashboard_mib"] = rss()
        del events
        trim_heap()
        phase("tb_views")
        put_tb_views(store, place, "traces/0-trace", entry, path, 1 << 62)
        out["tb_views_mib"] = rss()
    if measured is not None:
        out["task_mib"] = measured.peak_rss >> 20  # what the task itself logs and records
out.update(wall=time.perf_counter() - t0, cpu=time.process_time() - c0, peak_mib=rss())
print(json.dumps(out))
"""


def _status_kib(pid: int) -> dict[str, int]:
    """RssAnon and RssFile (KiB) of process ``pid`` from ``/proc/<pid>/status``; {} once it is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    fields = (ln.split(":", 1) for ln in lines)
    return {k: int(v.split()[0]) for k, v in fields if k in ("RssAnon", "RssFile")}


def run_child(
    mode: str, path: Path, budget: int, code: Path | None = None, cgroup: Path | None = None
) -> dict[str, Any]:
    """Run ``CHILD`` in a fresh interpreter (in ``cgroup`` when given), sampling its anonymous and
    file-backed RSS every ``SAMPLE_S`` from here; the child's JSON plus ``anon_mib`` (peak RssAnon),
    ``<phase>_anon_mib`` (its peak while that phase ran) and ``file_mib`` (peak RssFile)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code / "services"), str(code / "workers")])
    argv = [sys.executable, "-c", CHILD, mode, str(path), str(budget)]
    if cgroup is not None:  # join the cgroup first, then become the child: all its memory counts
        join = f'echo $$ > {shlex.quote(str(cgroup / "cgroup.procs"))} && exec "$@"'
        argv = ["sh", "-c", join, "sh", *argv]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(child.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    peaks: dict[str, int] = {}
    while child.poll() is None:
        now = _status_kib(child.pid)
        phases = [ln.split()[1] for ln in list(lines) if ln.startswith("phase ")]
        key = f"{phases[-1] if phases else 'start'}_anon_mib"
        peaks[key] = max(peaks.get(key, 0), now.get("RssAnon", 0) >> 10)
        peaks["file_mib"] = max(peaks.get("file_mib", 0), now.get("RssFile", 0) >> 10)
        time.sleep(SAMPLE_S)
    reader.join()
    err = child.stderr.read() if child.stderr else ""  # type: ignore[union-attr]
    if child.returncode:
        why = "killed (SIGKILL: the cgroup's limit?)" if child.returncode in (-9, 137) else None
        return {"error": why or (err.strip().splitlines() or ["?"])[-1]}
    result: dict[str, Any] = json.loads(lines[-1])
    peaks["anon_mib"] = max(v for k, v in peaks.items() if k.endswith("_anon_mib"))
    return result | peaks


def _row(got: dict[str, Any], mb: float, floor: dict[str, Any], slope: float | None) -> str:
    peak, anon = got["peak_mib"], got["anon_mib"]
    label = f"{got['events']:>10}" if slope is not None else f"{'(before)':>10}"
    phases = "/".join(str(got.get(f"{p}_anon_mib", "-")) for p in ("reader", "dashboard", "tb_views"))
    return (
        f"{label} {mb:>8.0f} {mb / floor['wall']:>10.0f} {mb / got['wall']:>6.0f} "
        f"{mb / got['cpu']:>8.1f} {got['reader_mib']:>7} {got['dashboard_mib']:>9} "
        f"{got['tb_views_mib']:>8} {peak:>8} {phases:>16} {anon:>8} {got['file_mib']:>8} "
        f"{anon * 2**20 / (mb * 1e6):>6.2f} "
        f"{'' if slope is None else f'{slope:.0f}':>7} {got.get('task_mib', '-'):>8} "
        f"{'ok' if anon * 2**20 < GOAL_BYTES else 'over':>4}"
    )


@contextmanager
def memory_cgroup(limit_mib: int | None) -> Iterator[Path | None]:
    """A fresh memory cgroup (v2 ``memory.max``, else v1 ``memory.limit_in_bytes``) limited to
    ``limit_mib``; None without a limit. Removed after."""
    if limit_mib is None:
        yield None
        return
    v1 = Path("/sys/fs/cgroup/memory")
    root = v1 if v1.is_dir() else Path("/sys/fs/cgroup")
    group = root / f"bench-ingest-memory-{os.getpid()}"
    group.mkdir()
    try:
        limit = str(limit_mib << 20)
        (group / ("memory.limit_in_bytes" if root == v1 else "memory.max")).write_text(limit)
        yield group
    finally:
        group.rmdir()


def main() -> int:
    if not TRACE.exists():
        print(f"the real trace is not at {TRACE} (the shared checkout next to the repo)", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[1_000_000, 4_000_000])
    parser.add_argument("--tmp", default=None, help="where the generated traces go (deleted after)")
    parser.add_argument("--before", type=Path, default=None, help="a checkout of earlier code to run too")
    parser.add_argument("--before-max", type=int, default=1_000_000, help="no --before run above this size")
    parser.add_argument(
        "--cgroup-mib", type=int, default=None, help="run each ingest in a memory cgroup of this limit (root)"
    )
    parser.add_argument(
        "--budget-mib", type=int, default=1024, help="the trace's budget (job_ingest_trace_memory_bytes)"
    )
    args = parser.parse_args()
    budget = args.budget_mib << 20
    from profilerhub_worker.ingest.limits import PARSE_MEMORY_FACTOR

    print("command:", shlex.join([Path(sys.executable).name, *sys.argv]))
    print(f"source: {TRACE.name} re-timed, gzip level 1; one process per run; goal: peak < "
          f"{GOAL_BYTES >> 20} MiB; reservation factor today: {PARSE_MEMORY_FACTOR}; the trace's budget: "
          f"{args.budget_mib} MiB")  # fmt: skip
    if args.cgroup_mib is not None:
        print(f"each ingest runs in a memory cgroup limited to {args.cgroup_mib} MiB (page cache included, "
              "reclaimable): an ingest over it is killed")  # fmt: skip
    head = ("events", "JSON MB", "floor MB/s", "MB/s", "MB/cpu-s", "reader", "dashboard", "tb views",
            "peak MiB", "anon r/d/tb", "anon MiB", "file MiB", "x size", "B/event", "task MiB",
            "goal")  # fmt: skip
    widths = (10, 8, 10, 6, 8, 7, 9, 8, 8, 16, 8, 8, 6, 7, 8, 4)
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, widths, strict=True)))
    last: tuple[int, float] | None = None
    with tempfile.TemporaryDirectory(prefix="bench-ingest-memory-", dir=args.tmp) as tmp:
        for events in args.events:
            path = Path(tmp) / f"trace-{events}.json.gz"
            t0 = time.perf_counter()
            size = write_trace(path, events, plain=False)
            made = time.perf_counter() - t0
            floor = run_child("floor", path, budget)
            with memory_cgroup(args.cgroup_mib) as group:
                got = run_child("ingest", path, budget, cgroup=group)
            if "error" in got or "error" in floor:
                print(f"{events:>10} error: {got.get('error') or floor.get('error')}")
                continue
            mb = size / 1e6
            slope = (got["anon_mib"] - last[1]) * 2**20 / (events - last[0]) if last else float("nan")
            last = (events, got["anon_mib"])
            print(_row(got, mb, floor, slope))
            if args.before is not None and events <= args.before_max:
                with memory_cgroup(args.cgroup_mib) as group:
                    old = run_child("ingest", path, budget, args.before, group)
                print(
                    f"{'':>10} before: error: {old['error']}"
                    if "error" in old
                    else _row(old, mb, floor, None)
                )
            print(f"{'':>10} (written in {made:.1f} s, {path.stat().st_size / 1e6:.0f} MB on disk; ingest "
                  f"{got['wall']:.1f} s wall, {got['cpu']:.1f} s CPU)")  # fmt: skip
            path.unlink()
    print("reader/dashboard/tb views: peak RSS (MiB, ru_maxrss: file-backed pages included) once each phase "
          "is done; anon r/d/tb: peak RssAnon (sampled every 10 ms) while each phase ran; anon MiB / file "
          "MiB: peak RssAnon / RssFile; x size: peak anon over the decompressed bytes; B/event: the peak "
          "anon's growth per event since the size before; task MiB: the peak RSS the ingest measured "
          "of itself (ingest.memory); goal: peak anon under 1 GiB")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
