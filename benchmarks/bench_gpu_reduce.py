"""What ``ph.watch``'s reductions and hooks cost on a GPU, kernel by kernel (needs CUDA).

1. **Reductions**: a saved step's tensors (every weight, bias and gradient of ``--layers``
   Linear(``--width``) layers, the shape of ``bench_debug_overhead.py``'s model, and a larger set
   of ``--big`` 4096 x 1024 matrices) reduced to rows by the GPU path (``_reduce._reduce_rows``:
   values in rows, dense reductions along them, a sort for the histogram) and, as the anchor in
   the same run, by the segment path it replaced (``_reduce._reduce_group``: ``index_add_`` and
   ``scatter_reduce_`` over the values, ``bincount``); median of ``--repeat`` runs timed with CUDA
   events, the rows of both compared, and each path's five costliest kernels (torch.profiler).
2. **Unsaved steps**: bare and watched steps alternated (``--pairs``), one collection at a time
   (the loss, the labels, both: the defaults' every-step part), each step synchronised: what each
   adds to a step, wall and the training thread's CPU.
3. **Calls**: each call of an unsaved step's way to the host, timed alone (``--calls-only``: this
   part alone; it runs first).
4. **Steps**: the model trained under ``ph.watch`` with weights, gradients and updates saved every
   other step: one bare step, one unsaved and one saved watched step profiled, each step's total
   self CPU time (every operator the step ran) and device time, and the costliest operators.

    python benchmarks/bench_gpu_reduce.py [--layers 24] [--width 256] [--big 12] [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from typing import Any

import torch
from bench_debug_overhead import build  # the same model as the step benchmark

import profilerhub as ph
from profilerhub import _reduce


def timed(fn: Any, repeat: int) -> float:
    """Median milliseconds of ``fn()`` on the GPU (CUDA events around each call)."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def top_kernels(fn: Any, n: int = 5) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_device_time_total)[:n]
    return [f"{e.self_device_time_total / 1000:8.3f} ms  x{e.count:<4} {e.key[:90]}" for e in rows]


def relative_errors(got: Any, want: Any) -> list[float]:
    """|got - want| of min, max, mean, std, l1 and l2, each over its own size (the mean's over
    the std: a mean near zero has no relative error to speak of)."""
    scale = [abs(want[0]), abs(want[1]), want[3], want[3], want[4], want[5]]
    return [abs(float(got[i]) - float(want[i])) / max(float(scale[i]), 1e-30) for i in range(6)]


def reductions(tensors: list[Any], label: str, repeat: int) -> None:
    import numpy as np

    from profilerhub_analysis.tensors import reduce_array

    n = sum(t.numel() for t in tensors)
    print(f"{label}: {len(tensors)} tensors, {n / 1e6:.2f}M values")
    want = [reduce_array(t.cpu().numpy()) for t in tensors]  # numpy's reference, in float64
    for name, fn in (("rows (now)", _reduce._reduce_rows), ("segments (anchor)", _reduce._reduce_group)):
        got = _reduce.fold(torch, [*fn(torch, tensors)]).cpu().numpy()
        err = np.max([relative_errors(g, w) for g, (w, _) in zip(got, want, strict=True)], axis=0)
        hist = all((g[10:] == h).all() for g, (_, h) in zip(got, want, strict=True))
        ms = timed(lambda fn=fn: fn(torch, tensors), repeat)
        print(f"  {name:18} {ms:8.3f} ms  ({ms * 1e6 / n:.2f} ns/value); against numpy, largest error of"
              f" min, max, mean (of std), std, l1, l2: {' '.join(f'{e:.0e}' for e in err)};"
              f" histograms equal: {hist}")  # fmt: skip
        for line in top_kernels(lambda fn=fn: fn(torch, tensors)):
            print(f"      {line}")


def steps(layers: int, width: int) -> None:
    from torch.profiler import ProfilerActivity, profile

    model, opt, loss_fn = build(layers, width, "cuda")
    x, y = torch.randn(64, width, device="cuda"), torch.randint(0, 10, (64,), device="cuda")

    def step(i: int, watched: bool) -> None:
        if watched:
            with ph.step(i):
                loss_fn(model(x), y).backward()
                opt.step()
                opt.zero_grad()
        else:
            loss_fn(model(x), y).backward()
            opt.step()
            opt.zero_grad()

    def profiled(label: str, i: int, watched: bool) -> None:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step(i, watched)
            torch.cuda.synchronize()
        events = [e for e in prof.key_averages() if e.key != "cudaDeviceSynchronize"]
        cpu = sum(e.self_cpu_time_total for e in events) / 1000
        dev = sum(e.self_device_time_total for e in events) / 1000
        print(f"{label} step: {cpu:.3f} ms self CPU in operators, {dev:.3f} ms on the device")
        for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:8]:
            cpu_ms, dev_ms = e.self_cpu_time_total / 1000, e.self_device_time_total / 1000
            print(f"      cpu {cpu_ms:7.3f} ms  dev {dev_ms:7.3f} ms  x{e.count:<4} {e.key[:80]}")

    for i in range(4):
        step(i, False)
    profiled("bare", 4, False)
    with tempfile.TemporaryDirectory() as out:
        ph.init(job="gpu-steps", output=out, sample_interval_s=1.0)
        ph.watch(model, opt, loss_fn, collections=["weights", "biases", "gradients", "optimizer_variables",
                                                   "losses", "labels"], every=2)  # fmt: skip
        for i in range(4):
            step(i, True)
        profiled("unsaved", 5, True)
        profiled("saved", 6, True)
        ph.finish()


def unsaved(layers: int, width: int, steps: int) -> None:
    """Paired, per collection: bare and watched steps alternated (synchronised each), nothing but
    the named collections on, saved every step: what each costs a step, wall and thread CPU."""
    import time

    bare, bare_opt, _ = build(layers, width, "cuda")
    model, opt, loss_fn = build(layers, width, "cuda")
    x, y = torch.randn(64, width, device="cuda"), torch.randint(0, 10, (64,), device="cuda")

    def one(m: Any, o: Any, i: int | None) -> tuple[float, float]:
        w0, t0 = time.perf_counter(), time.thread_time()
        if i is None:
            loss_fn(m(x), y).backward()
            o.step()
            o.zero_grad()
        else:
            with ph.step(i):
                loss_fn(m(x), y).backward()
                o.step()
                o.zero_grad()
        torch.cuda.synchronize()
        return time.perf_counter() - w0, time.thread_time() - t0

    print(f"unsaved steps, paired ({steps} pairs each, synchronised), ms added to a bare step:")
    for label, collections in (("ph.step only", None), ("losses", ["losses"]), ("labels", ["labels"]),
                               ("losses+labels (defaults)", ["losses", "labels"])):  # fmt: skip
        with tempfile.TemporaryDirectory() as out:
            ph.init(job="unsaved", output=out, sample_interval_s=1.0)
            handle = ph.watch(model, opt, loss_fn, collections=collections, every=1) if collections else None
            diffs = []
            for i in range(steps + 20):
                b = one(bare, bare_opt, None)
                w = one(model, opt, i)
                if i >= 20:
                    diffs.append((w[0] - b[0], w[1] - b[1], b[0]))
            if handle is not None:
                handle.remove()
            ph.finish()
        wall, cpu, base = (statistics.median(d[k] for d in diffs) * 1000 for k in range(3))
        print(f"  {label:26} wall {wall:+.3f} ms  thread CPU {cpu:+.3f} ms  (bare step {base:.3f} ms)")


def calls(n: int = 2000) -> None:
    """What each call an unsaved step makes on a GPU costs the training thread (median of ``n``
    calls, thread CPU, no synchronisation between them): the pieces of the loss's and the labels'
    way to the host."""
    import time

    from profilerhub._watch import _scatter_counts
    from profilerhub._watch_host import HostCopy, Ring

    dev = torch.device("cuda")
    loss = torch.randn((), device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    pinned = torch.empty((1,), dtype=torch.float64, pin_memory=True)
    done = torch.cuda.Event()
    done.record()
    torch.cuda.synchronize()

    ring = Ring(torch, dev)

    def put(t: Any) -> None:
        ring.used = 0  # the same slots again: the call's cost, not a full ring's
        ring.put(t)

    def full() -> None:
        copy = HostCopy(torch, defer=True)
        host = copy.scalars([loss])
        counts = copy.vectors({"y": _scatter_counts(torch, y, 10)})
        copy.record()
        copy.wait()
        float(host[0]), counts["y"].tolist()

    cases: list[tuple[str, Any]] = [
        ("stack + to(float64)", lambda: torch.stack([loss.to(torch.float64).reshape(())])),
        ("empty(pin_memory=True)", lambda: torch.empty((1,), dtype=torch.float64, pin_memory=True)),
        ("pinned.copy_(non_blocking)", lambda: pinned.copy_(loss.reshape(1), non_blocking=True)),
        ("Event() + record", lambda: torch.cuda.Event().record(torch.cuda.current_stream(dev))),
        ("event.query (done)", done.query),
        ("event.synchronize (done)", done.synchronize),
        ("loss.item()", loss.item),
        ("loss.to('cpu')", lambda: loss.to("cpu")),
        ("_scatter_counts (labels)", lambda: _scatter_counts(torch, y, 10)),
        ("torch.bincount (labels)", lambda: torch.bincount(y)),
        ("HostCopy: loss and labels", full),
        ("Ring.put (the loss)", lambda: put(loss)),
        ("Ring.put (64 labels)", lambda: put(y)),
    ]
    print(f"calls of an unsaved step, thread CPU per call (median of {n}):")
    for label, fn in cases:
        for _ in range(50):
            fn()
        times = []
        for _ in range(n):
            t0 = time.thread_time_ns()
            fn()
            times.append(time.thread_time_ns() - t0)
        torch.cuda.synchronize()
        print(f"  {label:28} {statistics.median(times) / 1000:8.1f} us")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--big", type=int, default=12, help="4096 x 1024 matrices in the large set (0: none)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=200, help="bare/watched pairs per collection")
    ap.add_argument("--calls-only", action="store_true", help="only the unsaved step's calls, one by one")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_gpu_reduce: torch sees no CUDA device: run it on a GPU machine")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    calls()
    if args.calls_only:
        return
    torch.manual_seed(0)
    small = []
    for _ in range(args.layers):
        small += [torch.randn(args.width, args.width, device="cuda") * 0.05]
        small += [torch.randn(args.width, device="cuda")]
    small += [g * 1e-3 for g in small]  # their gradients
    reductions(small, f"{args.layers} x Linear({args.width}) weights, biases and gradients", args.repeat)
    if args.big:
        big = [torch.randn(4096, 1024, device="cuda") * 0.02 for _ in range(args.big)]
        reductions(big, f"{args.big} x 4096x1024 matrices", args.repeat)
    unsaved(args.layers, args.width, args.pairs)
    steps(args.layers, args.width)
    cmd = " ".join(sys.argv[1:])
    print(f"command: python benchmarks/bench_gpu_reduce.py {cmd}".rstrip())


if __name__ == "__main__":
    main()
