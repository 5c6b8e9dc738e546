"""What the SDK costs a training loop: a fixed ~10 ms (CPU) step with and without the SDK.

With the SDK each step is ``with ph.step(i)`` around two ``ph.annotate`` ranges and one
``ph.log_metric``, with system metrics sampled every 100 ms in the background (the defaults),
writing to a temporary local folder.  Rounds alternate between the two (ABBA) so drift in machine
load and clock speed hits both alike.  Three figures:

- the median per-step wall time, with and without (what training feels; on a shared, loaded
  machine its noise is larger than the effect);
- the process's CPU time per step, all threads included (less noisy, still moved by neighbours
  sharing the core);
- the cost model: the per-call CPU cost of ``annotate``/``step``/``log_metric`` times the calls
  per step, plus the CPU share of the SDK's background threads measured in place while idle
  (steady on a loaded machine).  Goal: < 1 %.

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
    make: Callable[[int], Callable[[], None]], start: int, target_s: float, power: int = 1
) -> tuple[int, Callable[[], None]]:
    """Find the size whose work takes about ``target_s`` of CPU; work grows as size**power."""
    n = start
    for _ in range(8):
        work = make(n)
        t = statistics.median(timeit.repeat(work, number=1, repeat=9, timer=time.thread_time))
        ratio = min(4.0, max(0.25, target_s / max(t, 1e-9)))  # small moves: never a runaway size
        n = max(1, int(n * ratio ** (1 / power)))
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
        size, work = calibrate(torch_work, 256, 0.005, power=3)  # matmul: n**3

    plain: list[float] = []
    sdk: list[float] = []
    cpu_plain = cpu_sdk = 0.0
    with tempfile.TemporaryDirectory() as out:
        for r in range(args.rounds):
            # ABBA order: whichever block runs first after a pause (finish) is not always the same one.
            for with_the_sdk in (False, True) if r % 2 == 0 else (True, False):
                if not with_the_sdk:
                    walls, cpu = cpu_of(lambda: steps_plain(work, args.steps))
                    plain += walls
                    cpu_plain += cpu
                    continue
                ph.init(job=f"bench-{r}", output=out, sample_interval_s=args.sample_interval)
                walls, cpu = cpu_of(lambda: steps_sdk(work, args.steps))
                sdk += walls
                cpu_sdk += cpu
                summary = ph.finish()
                assert summary["completed"], summary

    base, with_sdk = statistics.median(plain), statistics.median(sdk)
    wall_overhead = (with_sdk - base) / base * 100
    cpu_overhead = (cpu_sdk - cpu_plain) / cpu_plain * 100

    # The SDK's background threads in place (cold caches, wake-ups included): CPU while idle.
    ph.init(job="idle", output=tempfile.mkdtemp(), sample_interval_s=args.sample_interval)
    c0, w0 = time.process_time(), time.monotonic()
    time.sleep(3)
    background = (time.process_time() - c0) / (time.monotonic() - w0)  # fraction of one core
    ph.finish()

    # The calls made in the loop, one by one, on this thread's CPU time.
    ph.init(job="micro", output=tempfile.mkdtemp(), sample_interval_s=60)
    n = 50_000

    def cpu_cost(fn: Callable[[], object], number: int) -> float:
        """CPU seconds per call of ``fn`` in this thread (waiting for a busy core does not count)."""
        return min(timeit.repeat(fn, number=number, repeat=3, timer=time.thread_time)) / number

    t_ann = cpu_cost(lambda: ph.annotate("x").__enter__().__exit__(None, None, None), n)
    t_step = cpu_cost(lambda: ph.step().__enter__().__exit__(None, None, None), n)
    t_metric = cpu_cost(lambda: ph.log_metric("m", 1.0), n)
    ph.finish()

    cpu_step = cpu_plain / (args.rounds * args.steps)  # the work itself, free of waiting for a core
    per_step = 2 * t_ann + t_step + t_metric
    estimate = (per_step / cpu_step + background) * 100

    load = os.getloadavg()[0]
    print(f"command: {' '.join([sys.executable.split('/')[-1], *sys.argv])}")
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} while measuring")
    print(f"work: {args.work} (size {size}), {args.rounds} rounds x {args.steps} steps, ABBA order")
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
        f"log_metric {t_metric * 1e6:.2f} us; background threads {background * 1e3:.2f} ms CPU per second"
    )
    print(
        f"overhead from these costs: {per_step * 1e6:.1f} us per {cpu_step * 1e3:.1f} ms step + background "
        f"{background * 100:.2f} % of a core = {estimate:.2f} %  (goal < 1 %)"
    )


if __name__ == "__main__":
    main()
