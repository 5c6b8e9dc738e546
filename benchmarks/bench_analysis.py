#!/usr/bin/env python3
"""Trace analysis speed and peak memory: ProfilerHub against gzip, orjson and HTA.

For each trace, every contender runs in its own fresh subprocess (so peak memory, ``ru_maxrss``,
is that contender's alone) and repeats the work ``--repeat`` times; the best time is reported.

  gunzip        read + gzip-decompress the file
  orjson        gunzip + ``orjson.loads`` into Python objects (the floor for "just decode it")
  ours          ``load_trace`` + every analysis (``analyze_store``), in-process
  ours (CLI)    ``profilerhub analyze TRACE --format json`` as a process, wall time incl. start-up
  HTA           Holistic Trace Analysis: parse + kernel breakdown + temporal + idle time + launch
                stats, in its own interpreter (``--hta-python``, e.g. /tmp/hta-venv/bin/python)

HTA is not a dependency of ProfilerHub; install it into a separate venv:
  python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis 'pandas==2.2.3'

Usage:
  .venv/bin/python benchmarks/bench_analysis.py [TRACE ...] [--hta-python PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_TRACES = ROOT.parent / "shared" / "traces" / "hta" / "tests" / "data"
DEFAULT_TRACES = (
    SHARED_TRACES / "negative_queue_length_values_check" / "rank0.json.gz",
    SHARED_TRACES / "nccl_parser_config" / "nccl_data.json.gz",
)


# -- workers: each runs in its own process and prints one JSON line ------------------------------


def _work_gunzip(path: str) -> object:
    import gzip

    with open(path, "rb") as fh:
        return gzip.decompress(fh.read())


def _work_orjson(path: str) -> object:
    import gzip

    import orjson

    with open(path, "rb") as fh:
        return orjson.loads(gzip.decompress(fh.read()))


def _work_ours(path: str) -> object:
    from profilerhub_analysis.build import load_trace
    from profilerhub_analysis.report import analyze_store

    return analyze_store(load_trace(path))


def _hta_setup(path: str) -> str:
    os.environ.setdefault("HTA_DISABLE_NS_ROUNDING", "1")
    import logging

    logging.disable(logging.WARNING)
    folder = tempfile.mkdtemp(prefix="bench-hta-")
    os.symlink(os.path.abspath(path), os.path.join(folder, os.path.basename(path)))
    return folder


def _work_hta(folder: str) -> object:
    from hta.trace_analysis import TraceAnalysis

    analyzer = TraceAnalysis(trace_dir=folder)
    return (
        analyzer.get_gpu_kernel_breakdown(visualize=False, num_kernels=10**12),
        analyzer.get_temporal_breakdown(visualize=False),
        analyzer.get_idle_time_breakdown(visualize=False),
        analyzer.get_cuda_kernel_launch_stats(visualize=False),
    )


WORKERS = {"gunzip": _work_gunzip, "orjson": _work_orjson, "ours": _work_ours, "hta": _work_hta}


def run_worker(mode: str, path: str, repeat: int) -> None:
    arg = _hta_setup(path) if mode == "hta" else path
    if mode == "hta":  # import outside the timed region, as for the others
        import hta.trace_analysis  # noqa: F401
    elif mode == "ours":
        import profilerhub_analysis.report  # noqa: F401
    times = []
    try:
        for _ in range(repeat):
            t0 = time.perf_counter()
            result = WORKERS[mode](arg)
            times.append(time.perf_counter() - t0)
            del result
    finally:
        if mode == "hta":
            shutil.rmtree(arg, ignore_errors=True)
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {"best_s": min(times), "median_s": statistics.median(times), "peak_rss_mib": rss_kib / 1024}
        )
    )


# -- driver ---------------------------------------------------------------------------------------


def measure(python: str, mode: str, trace: Path, repeat: int, timeout: float) -> dict[str, float] | str:
    cmd = [python, str(Path(__file__).resolve()), "--worker", mode, str(trace), "--repeat", str(repeat)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"failed: {tail[:120]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_cli(trace: Path, repeat: int) -> dict[str, float] | str:
    cli = Path(sys.executable).parent / "profilerhub"
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run([str(cli), "analyze", str(trace), "--format", "json"], capture_output=True)
        times.append(time.perf_counter() - t0)
        if done.returncode != 0:
            return f"failed: {done.stderr.decode(errors='replace').strip()[-120:]}"
    return {"best_s": min(times), "median_s": statistics.median(times), "peak_rss_mib": float("nan")}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*", type=Path, help="trace files (default: negative_queue, nccl_data)")
    ap.add_argument("--hta-python", help="interpreter with HolisticTraceAnalysis installed")
    ap.add_argument("--repeat", type=int, default=3, help="runs per contender; the best is reported")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per contender and trace")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        run_worker(args.worker, str(args.traces[0]), args.repeat)
        return 0

    traces = args.traces or list(DEFAULT_TRACES)
    hta_python = args.hta_python
    if hta_python and not Path(hta_python).exists():
        print(f"warning: --hta-python {hta_python} does not exist; HTA is skipped", file=sys.stderr)
        hta_python = None
    print("command:", shlex.join([sys.executable, *sys.argv]))
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, repeat={args.repeat} (best of)")
    print()
    header = f"{'trace':<28} {'contender':<11} {'best s':>9} {'median s':>9} {'peak MiB':>9} {'vs ours':>9}"
    print(header)
    print("-" * len(header))
    for trace in traces:
        rows: dict[str, dict[str, float] | str] = {
            "gunzip": measure(sys.executable, "gunzip", trace, args.repeat, args.timeout),
            "orjson": measure(sys.executable, "orjson", trace, args.repeat, args.timeout),
            "ours": measure(sys.executable, "ours", trace, args.repeat, args.timeout),
            "ours (CLI)": measure_cli(trace, args.repeat),
        }
        if hta_python:
            rows["HTA"] = measure(hta_python, "hta", trace, args.repeat, args.timeout)
        else:
            rows["HTA"] = "skipped (no --hta-python)"
        ours = rows["ours"]
        label = f"{trace.name} ({trace.stat().st_size / 2**20:.1f} MiB)"
        for name, r in rows.items():
            if isinstance(r, str):
                print(f"{label:<28} {name:<11} {r}")
            else:
                ratio = r["best_s"] / ours["best_s"] if isinstance(ours, dict) else float("nan")
                print(
                    f"{label:<28} {name:<11} {r['best_s']:9.3f} {r['median_s']:9.3f} "
                    f"{r['peak_rss_mib']:9.0f} {ratio:8.2f}x"
                )
            label = ""
        if isinstance(ours, dict):
            summary = []
            for name in ("orjson", "HTA"):
                r = rows[name]
                if isinstance(r, dict):
                    summary.append(f"ours is {r['best_s'] / ours['best_s']:.1f}x faster than {name}")
            hta = rows["HTA"]
            if isinstance(hta, dict):
                summary.append(
                    f"peak memory {ours['peak_rss_mib']:.0f} MiB vs HTA {hta['peak_rss_mib']:.0f} MiB"
                )
            print(f"{'':<28} => " + "; ".join(summary))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
