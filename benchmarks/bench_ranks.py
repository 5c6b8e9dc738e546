#!/usr/bin/env python3
"""A job of many ranks in the profiler app, in headless Chromium: how long the all-ranks views take.

Builds a job of ``--ranks`` traces (default 64) from the two real GPU rank traces of the shared
samples (``hta/tests/data/trace_filter/sampled_rank-{0,1}.json.gz``, ~5,000 events each, NCCL
collectives): rank ``r`` is sample ``r % 2`` with its ``distributedInfo.rank`` set to ``r`` and its
clock ``r * --skew-us`` later (``baseTimeNanoseconds``), and rank ``--slow`` has every event's
duration stretched by ``--stretch``, so the overview has a diagonal and one straggler to show.
The job is ingested through real ingest workers (``bench_ingest_scale.ingest_once``: a hub on
SQLite, Redis, ``--workers`` worker processes of one task each; the ingest's wall time is printed)
and a real profiler app process serves it (``bench_pages.serve_job``).

Then, each ``--repeat`` times (a fresh browser context each time; the first against a fresh app
process: cold), once Chromium's own UI pages have loaded (``bench_views.browser_settled``: a
browser just launched loads them beside its first page, which is the browser's start, not the
page's), Chromium opens:

* the dashboard, timed from the navigation's start to the all-ranks overview drawn
  (``#ranks-overview .chart[data-ranks]``) and to the ranks table's rows, each stamped in the page
  by a MutationObserver the moment it appears;
* the timeline of the straggler (its first frame drawn: ``window.__timeline.firstDraw``);
* the compare page of the straggler against rank 0 (``#compare-body[data-ready]``).

Beside them, in the same run: the ranks answer (``api/jobs/{id}/ranks``) over HTTP, read from the
file the join wrote, and the same answer computed from the job's summary as the app did before
that file existed (the file moved away for the measurement, then back).

Goal (issue 25): the timeline's overview and the dashboard's per-rank table for a 64-rank job open
in under 1 s.

    .venv/bin/python benchmarks/bench_ranks.py [--ranks 64] [--workers 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pages import CHROMIUM, serve_job  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = [
    ROOT.parent / f"shared/traces/hta/tests/data/trace_filter/sampled_rank-{i}.json.gz" for i in (0, 1)
]
GOAL_MS = 1000.0


def rank_traces(ranks: int, slow: int, stretch: float, skew_us: float) -> list[bytes]:
    """One gzipped trace per rank (module docstring)."""
    docs = [json.loads(gzip.decompress(p.read_bytes())) for p in SAMPLES]
    out = []
    for r in range(ranks):
        doc = dict(docs[r % len(docs)])
        doc["distributedInfo"] = dict(doc.get("distributedInfo") or {}, rank=r, world_size=ranks)
        doc["baseTimeNanoseconds"] = int(r * skew_us * 1000)
        if r == slow:
            doc["traceEvents"] = [
                dict(e, dur=e["dur"] * stretch) if isinstance(e.get("dur"), int | float) else e
                for e in doc["traceEvents"]
            ]
        out.append(gzip.compress(json.dumps(doc).encode(), compresslevel=1))
    return out


def ingest(tmp: Path, bodies: list[bytes], workers: int) -> tuple[Path, str, float]:
    """The job through real ingest workers; (the stack's storage root, job id, ingest wall s)."""
    from bench_apps import Stack, wait_until
    from bench_ingest_scale import ingest_once

    from profilerhub_stack.embedded_redis import EmbeddedRedis

    redis_url, embedded = os.environ.get("PROFILERHUB_BENCH_REDIS_URL"), None
    if not redis_url:
        embedded = EmbeddedRedis(tmp / "redis")
        redis_url = embedded.start()
    stack = Stack(tmp / "stack", redis_url)
    try:
        wall, _, job_id = ingest_once(stack, wait_until, workers, bodies)
    finally:
        stack.stop()
        if embedded is not None:
            embedded.stop()
    return tmp / "stack" / "home" / "storage", job_id, wall


#: Stamps, in the page, the moment each marker appears (a MutationObserver: exact, where polling
#: for a selector sees it only after the frame that made it, however long that frame is).
MARKS = """
window.__marks = {};
const wanted = {overview: "#ranks-overview .chart[data-ranks]", table: "#ranks tbody tr",
                compare: "#compare-body[data-ready='true']"};
new MutationObserver(() => {
  for (const [name, sel] of Object.entries(wanted))
    if (!(name in window.__marks) && document.querySelector(sel)) window.__marks[name] = performance.now();
}).observe(document, {subtree: true, childList: true, attributes: true});
"""


def _ms(page: Any, name: str, marker: str) -> float:
    """Milliseconds from the navigation's start until ``marker`` (a CSS selector) was in the page."""
    page.wait_for_selector(marker, state="attached", timeout=120_000)
    return float(page.evaluate(f"() => window.__marks[{name!r}]"))


def open_views(
    base: str, headers: dict[str, str], job_id: str, slow_index: int, repeat: int
) -> tuple[list[dict[str, float]], list[str]]:
    """Each view opened ``repeat`` times (module docstring), once Chromium's own UI pages have
    loaded (``bench_views.browser_settled``: a browser just launched loads them beside the first
    page); the timings and those pages' URLs."""
    from bench_views import browser_settled
    from playwright.sync_api import sync_playwright

    runs = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        ui = browser_settled(browser)
        for _ in range(repeat):
            context = browser.new_context(viewport={"width": 1400, "height": 900}, extra_http_headers=headers)
            context.add_init_script(MARKS)
            page = context.new_page()
            got: dict[str, float] = {}
            page.goto(f"{base}jobs/{job_id}")
            got["overview_ms"] = _ms(page, "overview", "#ranks-overview .chart[data-ranks]")
            got["table_ms"] = _ms(page, "table", "#ranks tbody tr")
            page.goto(f"{base}jobs/{job_id}/timeline?trace={slow_index}")
            page.wait_for_function(
                "() => window.__timeline && window.__timeline.firstDraw !== null", timeout=120_000
            )
            got["timeline_ms"] = float(page.evaluate("() => window.__timeline.firstDraw"))
            page.goto(f"{base}compare?base={job_id}&test={job_id}&base_trace=0&test_trace={slow_index}")
            got["compare_ms"] = _ms(page, "compare", "#compare-body[data-ready='true']")
            runs.append(got)
            context.close()
        browser.close()
    return runs, ui


def time_ranks_answer(
    base: str, headers: dict[str, str], job_id: str, repeat: int
) -> tuple[list[float], int]:
    """The ranks answer's time over HTTP (ms, ``repeat`` times: the first is the app's cold read)
    and its size in bytes."""
    import httpx

    times, size = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        answer = httpx.get(f"{base}api/jobs/{job_id}/ranks", headers=headers, timeout=120)
        answer.raise_for_status()
        times.append((time.perf_counter() - t0) * 1000.0)
        size = len(answer.content)
    return times, size


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2, help="ingest worker processes")
    parser.add_argument("--repeat", type=int, default=3, help="browser opens (the first is cold)")
    parser.add_argument("--slow", type=int, default=13, help="the straggler rank")
    parser.add_argument("--stretch", type=float, default=1.3, help="the straggler's event durations x this")
    parser.add_argument("--skew-us", type=float, default=200.0, help="each rank's clock this much later")
    parser.add_argument("--keep", type=Path, default=None, help="build the job in this folder and keep it")
    args = parser.parse_args()
    print(f"command: .venv/bin/python benchmarks/{Path(__file__).name} {shlex.join(sys.argv[1:])}")
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")

    with contextlib.ExitStack() as cleanup:
        if args.keep is None:
            tmp = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="profilerhub-bench-ranks-")))
        else:
            tmp = args.keep
            tmp.mkdir(parents=True, exist_ok=True)
        bodies = rank_traces(args.ranks, args.slow, args.stretch, args.skew_us)
        print(f"job: {args.ranks} ranks, {sum(len(b) for b in bodies) / 1e6:.1f} MB gzipped in all")
        storage, job_id, wall = ingest(tmp, bodies, args.workers)
        print(f"ingest with {args.workers} workers: {wall:.1f} s from complete to Ready")
        folder = next(storage.glob(f"*/*/jobs/{job_id}"))
        domain_id, owner_id = folder.parts[-4], folder.parts[-3]
        processed = folder / "processed"
        ranks_file = processed / "ranks.json"
        doc = json.loads(ranks_file.read_text())
        slow_index = next(r["index"] for r in doc["ranks"] if r["rank"] == args.slow)
        sizes = {n: (processed / n).stat().st_size for n in ("ranks.json", "summary.json")}
        kb, mb = sizes["ranks.json"] / 1e3, sizes["summary.json"] / 1e6
        print(f"ranks.json {kb:.0f} kB, summary.json {mb:.1f} MB")

        app, base, headers = serve_job(storage, domain_id, owner_id, job_id)
        try:
            stored, body = time_ranks_answer(base, headers, job_id, args.repeat)
            runs, ui = open_views(base, headers, job_id, slow_index, args.repeat)
        finally:
            app.terminate()
            app.wait(20)
        # the same answer computed from the summary (as before the join wrote it), in a fresh app
        moved = ranks_file.with_suffix(".away")
        ranks_file.rename(moved)
        app, base, headers = serve_job(storage, domain_id, owner_id, job_id)
        try:
            computed, _ = time_ranks_answer(base, headers, job_id, args.repeat)
        finally:
            app.terminate()
            app.wait(20)
            moved.rename(ranks_file)

    print(
        f"\nranks answer ({body / 1e3:.0f} kB): from ranks.json "
        + ", ".join(f"{t:.0f}" for t in stored)
        + " ms; computed from the summary (before) "
        + ", ".join(f"{t:.0f}" for t in computed)
        + " ms (first: cold)"
    )
    print(f"Chromium's own UI pages, loaded before the first open: {', '.join(ui) or 'none'}")
    print(
        "{:>5} {:>12} {:>10} {:>12} {:>11}".format(
            "open", "overview ms", "table ms", "timeline ms", "compare ms"
        )
    )
    for i, r in enumerate(runs):
        figures = (r["overview_ms"], r["table_ms"], r["timeline_ms"], r["compare_ms"])
        print("{:>5} {:>12.0f} {:>10.0f} {:>12.0f} {:>11.0f}".format("cold" if i == 0 else "warm", *figures))
    worst = max(max(r["overview_ms"], r["table_ms"]) for r in runs)
    med = statistics.median(max(r["overview_ms"], r["table_ms"]) for r in runs)
    verdict = "meets" if worst < GOAL_MS else "MISSES"
    print(
        f"dashboard's all-ranks overview and table: worst {worst:.0f} ms, median {med:.0f} ms: "
        f"{verdict} the goal (< {GOAL_MS:.0f} ms)"
    )
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
