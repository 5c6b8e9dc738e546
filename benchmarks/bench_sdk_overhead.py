"""What the SDK costs a training loop: a fixed ~10 ms step with and without the SDK.

With the SDK each step is ``with ph.step(i)`` around two ``ph.annotate`` ranges and one
``ph.log_metric``, with system metrics sampled every 100 ms in the background (the defaults),
writing to a temporary local folder.  Rounds alternate between the two so drift in machine load
hits both alike.  Two figures: the median per-step wall time (what training feels, but noisy on a
shared machine) and the CPU time of the whole process per step (every SDK thread included, and
steady however loaded the machine is).  Goal: < 1 %.

    .venv/bin/python benchmarks/bench_sdk_overhead.py [--steps 100] [--rounds 10]
        [--work python|torch] [--sample-interval 0.1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import Callable

import profilerhub as ph


def python_work(n: int) -> Callable[[], None]:
    def work() -> None:
        s = 0
        for i in range(n):
            s += i * i

    return work


def torch_work(size: int) -> Callable[[], None]:
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(size, size), torch.randn(size, size)

    def work() -> None:
        torch.mm(a, b)

    return work


def calibrate(
    make: Callable[[int], Callable[[], None]], start: int, target_s: float = 0.010
) -> tuple[int, Callable[[], None]]:
    """Find the work size that takes about ``target_s`` of CPU (however loaded the machine is)."""
    n = start
    for _ in range(8):
        work = make(n)
        t = statistics.median(timeit.repeat(work, number=1, repeat=9, timer=time.thread_time))
        n = max(1, int(n * target_s / t))
    return n, make(n)


def steps_plain(work: Callable[[], None], steps: int) -> list[float]:
    out = []
    for _ in range(steps):
        t0 = time.perf_counter()
        work()
        work()
        out.append(time.perf_counter() - t0)
    return out


def steps_sdk(work: Callable[[], None], steps: int) -> list[float]:
    out = []
    for i in range(steps):
        t0 = time.perf_counter()
        with ph.step(i):
            with ph.annotate("forward"):
                work()
            with ph.annotate("backward"):
                work()
        ph.log_metric("train:loss", 0.5, step=i)
        out.append(time.perf_counter() - t0)
    return out


def cpu_of(fn: Callable[[], list[float]]) -> tuple[list[float], float]:
    """Run ``fn``; return its per-step wall times and the CPU time of the whole process (all threads)."""
    c0 = time.process_time()
    walls = fn()
    return walls, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--work", choices=("python", "torch"), default="python")
    parser.add_argument("--sample-interval", type=float, default=0.1, help="seconds (0.1-60)")
    args = parser.parse_args()

    # Two calls of `work` make one step: calibrate each call to 5 ms of CPU.
    if args.work == "python":
        size, work = calibrate(python_work, 100_000, 0.005)
    else:
        size, work = calibrate(torch_work, 256, 0.005)

    plain: list[float] = []
    sdk: list[float] = []
    cpu_plain = cpu_sdk = 0.0
    with tempfile.TemporaryDirectory() as out:
        for r in range(args.rounds):
            walls, cpu = cpu_of(lambda: steps_plain(work, args.steps))
            plain += walls
            cpu_plain += cpu
            ph.init(job=f"bench-{r}", output=out, sample_interval_s=args.sample_interval)
            walls, cpu = cpu_of(lambda r=r: steps_sdk(work, args.steps))
            sdk += walls
            cpu_sdk += cpu
            summary = ph.finish()
            assert summary["completed"], summary

    base, with_sdk = statistics.median(plain), statistics.median(sdk)
    wall_overhead = (with_sdk - base) / base * 100
    cpu_overhead = (cpu_sdk - cpu_plain) / cpu_plain * 100

    # The per-call costs behind it, measured alone (steady even on a busy machine).
    ph.init(job="micro", output=tempfile.mkdtemp(), sample_interval_s=60)
    n = 100_000

    def cpu_cost(fn: Callable[[], object], number: int) -> float:
        """CPU seconds per call of ``fn`` in this thread (waiting for a busy core does not count)."""
        return min(timeit.repeat(fn, number=number, repeat=3, timer=time.thread_time)) / number

    t_ann = cpu_cost(lambda: ph.annotate("x").__enter__().__exit__(None, None, None), n)
    t_step = cpu_cost(lambda: ph.step().__enter__().__exit__(None, None, None), n)
    t_metric = cpu_cost(lambda: ph.log_metric("m", 1.0), n)
    from profilerhub._system import SystemSampler

    sampler = SystemSampler()
    t_sample = cpu_cost(sampler.sample, 200)
    ph.finish()
    cpu_step = cpu_plain / (args.rounds * args.steps)  # the work itself, free of waiting for a core
    per_step = 2 * t_ann + t_step + t_metric
    estimate = (per_step / cpu_step + t_sample / args.sample_interval) * 100

    load = os.getloadavg()[0]
    print(f"command: {' '.join([sys.executable.split('/')[-1], *sys.argv])}")
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} while measuring")
    print(f"work: {args.work} (size {size}), {args.rounds} rounds x {args.steps} steps, alternating")
    every = args.sample_interval
    print(f"with the SDK: 2 annotate + step + log_metric per step, system metrics every {every} s")
    print(
        f"median step wall time:  {base * 1e3:7.3f} ms without, {with_sdk * 1e3:7.3f} ms with: "
        f"{wall_overhead:+.2f} %"
    )
    print(
        f"process CPU per step:   {cpu_step * 1e3:7.3f} ms without, "
        f"{cpu_sdk / (args.rounds * args.steps) * 1e3:7.3f} ms with: {cpu_overhead:+.2f} %  (all threads)"
    )
    print(
        f"per call: annotate {t_ann * 1e6:.2f} us, step {t_step * 1e6:.2f} us, "
        f"log_metric {t_metric * 1e6:.2f} us, one system sample {t_sample * 1e3:.3f} ms"
    )
    print(
        f"overhead from per-call costs: {per_step * 1e6:.1f} us per {cpu_step * 1e3:.1f} ms step + sampler "
        f"{t_sample / args.sample_interval * 100:.2f} % of a core = {estimate:.2f} %  (goal < 1 %)"
    )


if __name__ == "__main__":
    main()
