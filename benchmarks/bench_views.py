"""The Profile page (the TensorBoard plugin's views) at scale, in headless Chromium: how long each tab
takes to open for a job of N events.

For each size (default 1 M; ``--events 1000000,10000000`` for the issue's 10 M) a trace is made by
repeating a real GPU trace of the shared samples (alexnet: kernels, memcpy, runtimes, 8 GPUs' worth
of properties), each copy shifted in time and its correlation and External ids renumbered so every
launch still finds its operator, written copy by copy to a gzipped file (never in memory whole).
Its views are computed exactly as ingest computes them (``tbviews.views_and_calls`` over the file
read as a stream: the time and the peak RSS of that are printed), written to a local store as
ingest writes them (``tb_views.json``, ``tb_calls.npz``, the summary), and a real profiler app
process serves them (the hub stood in for by a one-job fake, as ``bench_pages.py`` does). Chromium
then opens each tab of ``/jobs/{id}/views``: the time from the navigation's start to the tab's
table drawn, cold (first open) and warm (again), and the Operators view over a time range (the API
answer behind a timeline selection).

"Drawn" is stamped in the page (``STAMP``, an init script): the moment the tab's marker is in the
document (a MutationObserver) and the end of the frame that first shows it (a task posted from
that frame's requestAnimationFrame runs once the frame's style, layout and paint are done); the
latter is the figure. Playwright's own sight of the marker (``wait_for_selector``, then
``performance.now()`` read over CDP: what this bench printed before) is printed beside it: it comes
later by playwright's own work, its script injected into each new document (15-35 ms of the
renderer's main thread per navigation in a trace, load 2-4) and its polling and round trips
(60-100 ms more in all at load 2-4).

The browser's own start is not a view's: a Chromium just launched loads its omnibox popup (two
``chrome://omnibox-popup.top-chrome`` pages, CDP targets of type ``browser_ui``) beside the first
page, and in a trace of that first open its renderer took 1.28 s of main-thread time against the
page's 0.54 s (load 6, 2 cores). So the tabs are opened once those pages are loaded and idle
(``browser_settled``); the app is still cold then (its first request of every file). The first open
in a Chromium just launched, not waiting, is printed beside it, on its own browser.

Goal (issue 23): each view opens in < 300 ms for a 10 M-event job. The anchor, in the same run, is
the plugin's own time to load the same trace file: ``torch-tb-profiler`` 0.4.3 (its last release)
in its own virtual environment (``--tb-python``; by default one ``bench_cache`` installs from PyPI
the first time) runs what its ``RunLoader``
runs per worker file, ``RunProfileData.parse`` then ``RunGenerator.generate_run_profile``, in a
child limited to ``--tb-memory`` GiB of address space and ``--tb-timeout`` seconds; a load that
fails or passes either is printed as such.

    .venv/bin/python benchmarks/bench_views.py [--events 1000000,10000000] [--repeat 3]
        [--tb-python PATH] [--tb-memory 8] [--tb-timeout 600]
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shlex
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cache  # noqa: E402
from bench_pages import CHROMIUM, serve_job, stop_job  # noqa: E402

TB_VERSION = "0.4.3"  # torch-tb-profiler's last release: the anchor

SHARED = Path(__file__).resolve().parents[2] / "shared"
SAMPLE = (
    SHARED / "traces/hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
)
GOAL_MS = 300
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: Each tab and what says it is drawn.
TABS = {
    "overview": "#vw-average .stack",
    "operators": "#vw-ops table tbody tr",
    "kernels": "#vw-kernels table tbody tr",
    "memory": "#vw-memory, #vw-mem-curve",
    "modules": "#vw-modules",
    "distributed": "#vw-dist, #vw-ranks",
}


#: In every document, before its own scripts: stamps ``window.__vw = {drawn, painted}`` for the
#: tab the URL names (``TABS``' marker), both ``performance.now()``: the marker in the document, and
#: the end of the first frame that shows it.
STAMP = """(() => {
  const tab = new URLSearchParams(location.search).get("tab") || "overview";
  const marker = (MARKERS)[tab];
  const stamp = (window.__vw = {});
  const seen = new MutationObserver(() => {
    if (stamp.drawn !== undefined || !document.querySelector(marker)) return;
    stamp.drawn = performance.now();
    seen.disconnect();
    requestAnimationFrame(() => {
      const after = new MessageChannel();
      after.port1.onmessage = () => (stamp.painted = performance.now());
      after.port2.postMessage(null);
    });
  });
  seen.observe(document, { childList: true, subtree: true });
})();""".replace("MARKERS", json.dumps(TABS))


def open_tab(page: Any, url: str, tab: str) -> dict[str, float]:
    """Open ``url`` (the views page at ``tab``) and wait for it drawn; its stamps (``STAMP``) and
    when playwright saw the marker (``seen``), all ms from the navigation's start."""
    page.goto(url)
    page.wait_for_selector(TABS[tab], timeout=120_000)
    seen = float(page.evaluate("() => performance.now()"))
    page.wait_for_function("() => window.__vw && window.__vw.painted !== undefined", timeout=120_000)
    stamps: dict[str, float] = page.evaluate("() => window.__vw")
    return {"drawn": stamps["drawn"], "painted": stamps["painted"], "seen": seen}


_MARK = "@@bench@@"


def _template(event: dict[str, Any]) -> list[str]:
    """The event's JSON cut around its ``ts`` and ids: literal, key, literal, key, ..., literal."""
    c = dict(event, ts=f"{_MARK}ts")
    if c.get("args"):
        args = dict(c["args"])
        args.pop("Python id", None)
        for k in _IDS:
            if args.get(k):
                args[k] = f"{_MARK}{k}"
        c["args"] = args
    text = json.dumps(c, separators=(",", ":"))
    pieces: list[str] = []
    for i, part in enumerate(text.split(f'"{_MARK}')):
        if i == 0:
            pieces.append(part)
            continue
        key, rest = part.split('"', 1)
        pieces += [key, rest]
    return pieces


_IDS = ("correlation", "External id", "external id")


def write_repeated_trace(path: Path, events: int) -> int:
    """The sample's events repeated until ``events``, as one gzipped Chrome-trace document at
    ``path``, written copy by copy (never in memory whole); its decompressed bytes."""
    doc = json.loads(gzip.decompress(SAMPLE.read_bytes()))
    base = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    t0 = min(e["ts"] for e in base)
    span = max(e["ts"] + e.get("dur", 0) for e in base) - t0 + 10
    ids = max(max(int(e.get("args", {}).get(k, 0) or 0) for e in base) for k in _IDS) + 1
    templates = [(_template(e), e) for e in base]
    head = json.dumps({k: v for k, v in doc.items() if k != "traceEvents"}, separators=(",", ":"))
    size, left, copy = 0, events, 0
    with gzip.open(path, "wt", compresslevel=1) as out:
        size += out.write(head[:-1] + ',"traceEvents":[')
        sep = ""
        while left > 0:
            shift, offset = copy * span, copy * ids
            texts = []
            for pieces, e in templates[:left]:
                args = e.get("args") or {}
                values = {
                    "ts": repr(e["ts"] + shift),
                    **{k: repr(args[k] + offset) for k in _IDS if args.get(k)},
                }
                texts.append("".join(p if i % 2 == 0 else values[p] for i, p in enumerate(pieces)))
            size += out.write(sep + ",".join(texts))
            sep = ","
            left -= len(texts)
            copy += 1
        size += out.write("]}")
    return size


def write_job(root: Path, trace: Path) -> tuple[str, str, str, dict[str, float]]:
    """Compute the views as ingest does (the file read as a stream) and write them;
    (domain_id, owner_id, job_id, timings)."""
    from profilerhub_analysis.reader import file_chunks
    from profilerhub_analysis.rules.tb_recommendations import brief
    from profilerhub_analysis.stream import SLICE_BYTES
    from profilerhub_analysis.tbviews import views_and_calls
    from profilerhub_analysis.tbviews.calls import pack
    from profilerhub_analysis.tbviews.parse import parse_chunks
    from profilerhub_core.storage import layout, open_store

    domain_id, owner_id, job_id = (str(uuid.uuid4()) for _ in range(3))
    store = open_store((root / layout.user_prefix(domain_id, owner_id)).as_uri())
    folder = f"jobs/{job_id}/processed/traces/0-bench"
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    views, calls = views_and_calls(parse_chunks(file_chunks(trace, 1 << 62, size=SLICE_BYTES)))
    timings = {"views_s": time.perf_counter() - t,
               "views_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               "rss_before_mb": rss0 / 1024}  # fmt: skip
    blob = json.dumps(views).encode()
    store.put(f"{folder}/{layout.TRACE_TB_VIEWS}", blob)
    packed = pack(calls)
    store.put(f"{folder}/{layout.TRACE_TB_CALLS}", packed)
    timings["tb_views_kb"] = len(blob) / 1024
    timings["tb_calls_kb"] = len(packed) / 1024
    timings["operator_calls"] = float(len(calls["ts"]))
    entry = {
        "file": "bench.json.gz",
        "report": {"rank": 0},
        "tb_views": f"processed/traces/0-bench/{layout.TRACE_TB_VIEWS}",
        "tb_calls": f"processed/traces/0-bench/{layout.TRACE_TB_CALLS}",
        "tb_brief": brief(views),
    }
    summary = {"format": "profilerhub-summary/1", "job": {"name": "bench"}, "traces": [entry]}
    store.put(f"jobs/{job_id}/processed/summary.json", json.dumps(summary, default=float).encode())
    steps = (views.get("tb_overview") or {}).get("steps") or []
    if steps:  # the first half of the profiled window, as a timeline selection would pick it
        t0, t1 = steps[0]["start_us"], steps[-1]["end_us"]
        timings["range_t0us"], timings["range_t1us"] = t0, (t0 + t1) / 2
    return domain_id, owner_id, job_id, timings


TB_ANCHOR = r"""
import json, resource, sys, tempfile, time
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]) << 30,) * 2)
from torch_tb_profiler.profiler.data import RunProfileData
from torch_tb_profiler.profiler.run_generator import RunGenerator
t0 = time.perf_counter()
with tempfile.TemporaryDirectory() as cache:
    data = RunProfileData.parse("worker0", None, sys.argv[1], cache)
    RunGenerator("worker0", None, data).generate_run_profile()
print(json.dumps({"load_s": time.perf_counter() - t0,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def plugin_load(trace: Path, python: str, memory_gib: int, timeout: float) -> dict[str, Any]:
    """The plugin's own load of ``trace`` (``TB_ANCHOR`` in ``python``): ``load_s`` and
    ``peak_mib``, or ``failed`` saying why."""
    if not Path(python).exists():
        return {"failed": f"not measured: {python} is missing (python3 -m venv DIR && DIR/bin/pip "
                          "install torch-tb-profiler)"}  # fmt: skip
    try:
        done = subprocess.run([python, "-c", TB_ANCHOR, str(trace), str(memory_gib)], capture_output=True,
                              text=True, timeout=timeout, cwd=tempfile.gettempdir(), check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"failed": f"did not load within {timeout:.0f} s"}
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"failed": f"failed within {memory_gib} GiB: {last[:200]}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


#: Resolves once a page has loaded and its renderer is idle (evaluated in Chromium's own UI pages).
_SETTLED = """new Promise((done) => {
  const idle = () => requestIdleCallback(() => done(document.readyState), { timeout: 30000 });
  if (document.readyState === "complete") idle();
  else addEventListener("load", idle);
})"""


def browser_settled(browser: Any) -> list[str]:
    """Wait until Chromium's own UI pages (CDP targets of type ``browser_ui``, which a browser just
    launched loads beside the first page) are loaded and idle; their URLs."""
    cdp = browser.new_browser_cdp_session()
    answered: dict[str, Any] = {}
    cdp.on("Target.receivedMessageFromTarget", lambda e: answered.setdefault(e["sessionId"], e["message"]))
    targets = [t for t in cdp.send("Target.getTargets")["targetInfos"] if t["type"] == "browser_ui"]
    sessions = {}
    for t in targets:
        sid = cdp.send("Target.attachToTarget", {"targetId": t["targetId"], "flatten": False})["sessionId"]
        sessions[sid] = t["url"]
        ask = {"expression": _SETTLED, "awaitPromise": True, "returnByValue": True}
        message = json.dumps({"id": 1, "method": "Runtime.evaluate", "params": ask})
        cdp.send("Target.sendMessageToTarget", {"sessionId": sid, "message": message})
    deadline = time.monotonic() + 60
    while len(answered) < len(sessions) and time.monotonic() < deadline:
        cdp.send("Browser.getVersion")  # a round trip: the sync API delivers the answers meanwhile
        time.sleep(0.02)
    cdp.detach()
    return sorted(sessions.values())


def first_open_just_launched(p: Any, base: str, headers: dict[str, str], job_id: str) -> dict[str, float]:
    """The overview opened in a Chromium just launched, not waiting for its own UI pages."""
    browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    context = browser.new_context(viewport={"width": 1400, "height": 900}, extra_http_headers=headers)
    context.add_init_script(STAMP)
    opened = open_tab(context.new_page(), f"{base}jobs/{job_id}/views?tab=overview", "overview")
    browser.close()
    return opened


def measure(events: int, repeat: int, anchor: tuple[str, int, float]) -> dict[str, Any]:
    import httpx
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="profilerhub-bench-views-"))
    root = tmp / "store"
    t = time.perf_counter()
    trace = tmp / "trace.json.gz"
    size = write_repeated_trace(trace, events)
    out: dict[str, Any] = {"events": events, "trace_mb": size / 1e6, "make_s": time.perf_counter() - t}
    domain_id, owner_id, job_id, timings = write_job(root, trace)
    out |= timings
    out["plugin"] = plugin_load(trace, *anchor)
    app, base, headers = serve_job(root, domain_id, owner_id, job_id)
    try:
        if "range_t0us" in out:
            params = {"t0us": out["range_t0us"], "t1us": out["range_t1us"]}
            times = []
            for _ in range(repeat + 1):
                t = time.perf_counter()
                answer = httpx.get(f"{base}api/jobs/{job_id}/views/operators", params=params, headers=headers)
                times.append((time.perf_counter() - t) * 1000)
                answer.raise_for_status()
            out["range_first_ms"], out["range_warm_ms"] = times[0], float(np.median(times[1:]))
            out["range_calls"] = answer.json()["calls"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1400, "height": 900}, extra_http_headers=headers)
            context.add_init_script(STAMP)
            page = context.new_page()
            out["browser_ui"] = browser_settled(browser)
            for tab in TABS:
                # the first is cold for this tab (the browser's and the app's first, at the very first)
                url = f"{base}jobs/{job_id}/views?tab={tab}"
                runs = [open_tab(page, url, tab) for _ in range(repeat + 1)]
                for what in ("painted", "drawn", "seen"):
                    out[f"{tab}_first_{what}_ms"] = runs[0][what]
                    out[f"{tab}_{what}_ms"] = float(np.median([r[what] for r in runs[1:]]))
            browser.close()
            out["just_launched"] = first_open_just_launched(p, base, headers, job_id)
    finally:
        stop_job(app, tmp, root)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", default="1000000", help="comma-separated sizes (default 1000000)")
    ap.add_argument("--repeat", type=int, default=3, help="warm opens per tab (their median is printed)")
    ap.add_argument("--tb-python", help="python with torch-tb-profiler (default: one installed once)")
    ap.add_argument("--tb-memory", type=int, default=8, help="GiB of address space the plugin's load may use")
    ap.add_argument("--tb-timeout", type=float, default=600.0, help="seconds the plugin's load may take")
    args = ap.parse_args()
    python = args.tb_python
    if python is None:
        try:
            name, plugin = f"torch-tb-profiler-{TB_VERSION}", [f"torch-tb-profiler=={TB_VERSION}"]
            python = str(bench_cache.venv(name, plugin, "tensorboard") / "python")
        except bench_cache.Unavailable as e:
            python = f"(not installed: {e})"
    anchor = (python, args.tb_memory, args.tb_timeout)
    if not SAMPLE.exists():
        print(f"skipped: {SAMPLE} is missing (the shared traces lie beside the checkout)")
        return 0
    print("command:", shlex.join([Path(sys.executable).name, *sys.argv]))
    print(f"sample: {SAMPLE.name} repeated; machine load {Path('/proc/loadavg').read_text().split()[0]}")
    ok = True
    for n in (int(x) for x in args.events.split(",")):
        r = measure(n, args.repeat, anchor)
        size = f"{r['trace_mb']:.0f} MB of JSON, {r['operator_calls']:,.0f} operator calls"
        print(f"\n{n:,} events ({size}):")
        print(
            f"  views at ingest: {r['views_s']:.1f} s, peak RSS {r['views_peak_rss_mb']:.0f} MB; "
            f"tb_views.json {r['tb_views_kb']:.0f} KiB, tb_calls.npz {r['tb_calls_kb']:.0f} KiB"
        )
        worst = 0.0
        print(f"  each tab: drawn (the end of the first frame showing it), warm (median of {args.repeat}) / "
              "first; [marker in the page; playwright saw it], ms from the navigation's start")  # fmt: skip
        for tab in TABS:
            worst = max(worst, r[f"{tab}_painted_ms"], r[f"{tab}_first_painted_ms"])
            painted, drawn, seen = (f"{r[f'{tab}_{w}_ms']:6.1f} / {r[f'{tab}_first_{w}_ms']:6.1f}"
                                    for w in ("painted", "drawn", "seen"))  # fmt: skip
            print(f"  {tab:<12} opens in {painted} ms  [{drawn}; {seen}]")
        launched = r["just_launched"]
        ui = ", ".join(r["browser_ui"]) or "no browser UI page"
        print(f"  overview in a Chromium just launched (its own UI pages loading beside it; the app warm): "
              f"{launched['painted']:.1f} ms [{launched['drawn']:.1f}; {launched['seen']:.1f}]; the tabs "
              f"above were opened once {ui} had loaded")  # fmt: skip
        if "range_warm_ms" in r:
            print(f"  operators over a range ({r['range_calls']:,} calls): API {r['range_warm_ms']:.1f} ms "
                  f"warm, {r['range_first_ms']:.1f} ms first (reads tb_calls.npz)")  # fmt: skip
        met = worst < GOAL_MS
        ok &= met
        print(f"  goal: every view drawn < {GOAL_MS} ms, first and warm: {'met' if met else 'NOT met'} "
              f"(slowest {worst:.1f} ms)")  # fmt: skip
        plugin = r["plugin"]
        if "failed" in plugin:
            print(f"  anchor: the TensorBoard plugin's own load of the same file: {plugin['failed']}")
        else:
            print(f"  anchor: the TensorBoard plugin's own load of the same file: {plugin['load_s']:.1f} s, "
                  f"peak RSS {plugin['peak_mib']:.0f} MiB (its views then open from memory)")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
