"""What ``ph.watch`` costs a training step, beside the hand-written way of getting the same numbers.

A CPU MLP of ``--layers`` Linear(``--width``)+ReLU blocks (default 24 x 256: 1.58M parameters,
48 layers), batch ``--batch``, SGD with momentum and cross-entropy, one thread. Configurations,
run in alternating rounds so drift in machine load hits all alike:

- ``none``: no SDK;
- ``init``: ``ph.init`` only (local output; system sampling and chunk writing in the background);
- ``watch``: ``ph.watch(model, opt, loss_fn)`` at the defaults (weights, biases, gradients,
  optimizer updates every 100 steps, the loss every step);
- ``all``: every collection (activations of every layer too) every step;
- ``hand``: no SDK, the same statistics the way people write them into TensorBoard by hand: per
  tensor (every weight, gradient, update and layer output, every step) ``min/max/mean/std/
  abs().sum()/norm()/isnan().sum()/isinf().sum()/(t == 0).sum()`` each with ``.item()``, and the
  log-magnitude histogram with ``numpy.histogram`` on the tensor's copy (what
  ``SummaryWriter.add_histogram`` does).

Printed: the median step time (wall, process CPU, and the training thread's own CPU) per
configuration, the overhead over ``none``, and the ratio of ``hand``'s overhead to ``all``'s.
Process CPU includes the SDK's background threads (system sampling every 0.1 s here, chunk
writing), which ``init`` alone already costs; the thread's CPU is what the step itself pays.
These medians are of a few dozen steps, so ``watch``'s is of steps between its saved ones.

The defaults' overhead (goal < 2 %) is smaller than the load noise of a shared machine between
processes, so it is measured apart, **paired** (``--paired`` pairs, 0 skips it): in one process,
two identical models, one bare (no ``ph.step``, no hooks) and one under ``ph.step`` and
``ph.watch`` at the defaults, train in alternating steps (AB, BA, AB, …), each step timed by the
training thread's CPU clock (``time.thread_time``: what the step itself executes, not the time
other processes take the core). Each watched step is compared with its neighbour bare step, so
drift in load cancels; saved steps (every 100th: weights, biases, gradients, updates) and unsaved
ones (the loss and labels only) are taken apart, and the overhead is amortised over the save
interval: ``((every - 1) * median(unsaved diff) + median(saved diff)) / every`` over the bare
step's median, with a 95 % bootstrap interval (pairs resampled). Background threads (sampling,
chunk writing) run in both halves alike and are ``init``'s cost, printed above.

Goals: ``watch`` < 2 %, ``all`` at least 3x cheaper than ``hand``. ``--device cuda`` runs the
same on a GPU: each configuration's steps timed in blocks of 10 with one synchronisation per
block (what a training loop that does not read its loss every step pays: a synchronisation the
SDK added would show), ``--steps`` blocks; the paired figure uses each step's wall time,
synchronised, so it shows what ph.watch adds to the GPU's work, not to the CPU's run-ahead.

    .venv/bin/python benchmarks/bench_debug_overhead.py [--steps 30] [--rounds 5] [--paired 1000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import Any

import numpy as np
import torch

import profilerhub as ph

ALL = ["weights", "biases", "gradients", "activations", "losses", "optimizer_variables", "labels"]
EDGES = np.concatenate([[0.0], 2.0 ** np.arange(-34, 21), [0.875, 0.9375, 0.96875], [np.inf]])
EDGES.sort()


BLOCK = 10
"""On a GPU, steps timed together, with one synchronisation (``run``)."""


def build(layers: int, width: int, device: str) -> tuple[Any, Any, Any]:
    torch.manual_seed(0)
    blocks: list[Any] = []
    for _ in range(layers):
        blocks += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*blocks, torch.nn.Linear(width, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    return model, opt, torch.nn.CrossEntropyLoss()


def hand_stats(t: Any) -> list[float]:
    t = t.detach()
    out = [
        t.min().item(),
        t.max().item(),
        t.float().mean().item(),
        t.float().std().item(),
        t.abs().sum().item(),
        t.norm().item(),
        torch.isnan(t).sum().item(),
        torch.isinf(t).sum().item(),
        (t == 0).sum().item(),
    ]
    np.histogram(np.abs(t.float().cpu().numpy()), bins=EDGES)
    return out


def run(config: str, steps: int, args: argparse.Namespace, out: str) -> tuple[float, float, float]:
    """Median wall, process CPU and training-thread CPU seconds per step of ``config``."""
    model, opt, loss_fn = build(args.layers, args.width, args.device)
    acts: list[Any] = []
    hooks = []
    if config == "hand":
        for m in model:
            hooks.append(m.register_forward_hook(lambda _m, _a, o: acts.append(o.detach())))
    if config != "none" and config != "hand":
        ph.init(job=f"bench-{config}", output=out, sample_interval_s=0.1)
        if config == "watch":
            ph.watch(model, opt, loss_fn)
        elif config == "all":
            ph.watch(model, opt, loss_fn, collections=ALL, every=1)
    x = torch.randn(args.batch, args.width, device=args.device)
    y = torch.randint(0, 10, (args.batch,), device=args.device)
    walls, cpus, threads = [], [], []
    # On a GPU the steps are timed in blocks of BLOCK with one synchronisation at each block's
    # end: a step's time is then what training pays (the CPU queueing ahead of the GPU), and a
    # synchronisation the SDK adds inside a step shows in it.
    block = BLOCK if args.device == "cuda" else 1
    for i in range(steps * block + 2):  # two warm-up steps
        if i < 2 or (i - 2) % block == 0:
            w0, c0, t0 = time.perf_counter(), time.process_time(), time.thread_time()
        with ph.step(i):
            loss = loss_fn(model(x), y)
            loss.backward()
            if config == "hand":
                before = [p.detach().clone() for p in model.parameters()]
                for p in model.parameters():
                    hand_stats(p)
                    hand_stats(p.grad)
            opt.step()
            if config == "hand":
                for p, b in zip(model.parameters(), before, strict=True):
                    hand_stats(p.detach() - b)
                for a in acts:
                    hand_stats(a)
                acts.clear()
                loss.item()
            opt.zero_grad()
        if i >= 2 and (i - 1) % block:
            continue
        if args.device == "cuda":
            torch.cuda.synchronize()
        if i >= 2:
            walls.append((time.perf_counter() - w0) / block)
            cpus.append((time.process_time() - c0) / block)
            threads.append((time.thread_time() - t0) / block)
    for h in hooks:
        h.remove()
    ph.finish()
    return statistics.median(walls), statistics.median(cpus), statistics.median(threads)


def paired(args: argparse.Namespace, out: str) -> dict[str, Any]:
    """Bare and watched steps alternated in one process: per-step thread CPU (wall on CUDA) of each."""
    bare, bare_opt, bare_loss = build(args.layers, args.width, args.device)
    model, opt, loss_fn = build(args.layers, args.width, args.device)
    ph.init(job="bench-paired", output=out, sample_interval_s=0.1)
    every = 100
    x = torch.randn(args.batch, args.width, device=args.device)
    y = torch.randint(0, 10, (args.batch,), device=args.device)
    clock = time.perf_counter if args.device == "cuda" else time.thread_time

    def one(m: Any, o: Any, lf: Any, step: int | None) -> float:
        t0 = clock()
        if step is None:
            loss = lf(m(x), y)
            loss.backward()
            o.step()
            o.zero_grad()
        else:
            with ph.step(step):
                loss = lf(m(x), y)
                loss.backward()
                o.step()
                o.zero_grad()
        if args.device == "cuda":
            torch.cuda.synchronize()
        return clock() - t0

    def pairs(n: int, first: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        warm = 3
        a_s, b_s, saved = [], [], []
        for i in range(first, first + n + warm):
            if i % 2 == 0:
                a, b = one(bare, bare_opt, bare_loss, None), one(model, opt, loss_fn, i)
            else:
                b, a = one(model, opt, loss_fn, i), one(bare, bare_opt, bare_loss, None)
            if i >= first + warm:
                a_s.append(a)
                b_s.append(b)
                saved.append(i % every == 0)
        return np.array(a_s), np.array(b_s), np.array(saved, dtype=bool)

    # First ph.step alone (the same model, not watched yet): what init's step costs the thread.
    step_bare, step_only, _ = pairs(max(args.paired // 4, 50), 1)
    ph.watch(model, opt, loss_fn)
    bare_t, watch_t, saved = pairs(args.paired, 10 * every)  # from a saved step on
    ph.finish()
    return {"bare": bare_t, "watch": watch_t, "saved": saved, "every": every,
            "step_bare": step_bare, "step_only": step_only}  # fmt: skip


def amortised(bare: np.ndarray, watch: np.ndarray, saved: np.ndarray, every: int) -> float:
    """The watched step's mean extra time over the save interval, as a share of the bare step."""
    d = watch - bare
    unsaved = float(np.median(d[~saved]))
    at_saved = float(np.median(d[saved])) if saved.any() else unsaved
    return ((every - 1) * unsaved + at_saved) / every / float(np.median(bare))


def report_paired(res: dict[str, Any], seed: int = 0, boot: int = 2000) -> None:
    bare, watch, saved, every = res["bare"], res["watch"], res["saved"], res["every"]
    d = watch - bare
    point = amortised(bare, watch, saved, every)
    rng = np.random.default_rng(seed)
    iu, isv = np.flatnonzero(~saved), np.flatnonzero(saved)
    draws = []
    for _ in range(boot):
        pick = np.concatenate([rng.choice(iu, len(iu)), rng.choice(isv, len(isv)) if len(isv) else isv])
        draws.append(amortised(bare[pick], watch[pick], saved[pick], every))
    lo, hi = np.percentile(draws, [2.5, 97.5])
    med = float(np.median(bare))
    print(f"paired: {len(bare)} bare/watched step pairs, {int(saved.sum())} saved (every {every})")
    print(f"  bare step median {med * 1e3:.2f} ms; unsaved steps +{np.median(d[~saved]) * 1e3:.3f} ms "
          f"({100 * np.median(d[~saved]) / med:.2f} %), saved steps "
          f"+{(np.median(d[saved]) if saved.any() else float('nan')) * 1e3:.2f} ms")  # fmt: skip
    print(f"defaults' overhead (ph.step + ph.watch over a bare step), paired, amortised over {every} "
          f"steps: {100 * point:.2f} % (95 % bootstrap interval {100 * lo:.2f} … {100 * hi:.2f} %; "
          "goal < 2 %)")  # fmt: skip
    sd = res["step_only"] - res["step_bare"]
    step_share = float(np.median(sd)) / med
    sdraws = [float(np.median(rng.choice(sd, len(sd)))) / med for _ in range(boot)]
    slo, shi = np.percentile(sdraws, [2.5, 97.5])
    print(f"  of which ph.step alone (init's, {len(sd)} pairs before ph.watch): {100 * step_share:.2f} % "
          f"({100 * slo:.2f} … {100 * shi:.2f} %); ph.watch's own: about "
          f"{100 * (point - step_share):.2f} %")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--paired", type=int, default=1000, help="bare/watched step pairs (0: skip)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, _, _ = build(args.layers, args.width, "cpu")
    params = sum(p.numel() for p in model.parameters())
    layers = sum(1 for m in model if not list(m.children()))
    configs = ["none", "init", "watch", "all", "hand"]
    wall: dict[str, list[float]] = {c: [] for c in configs}
    cpu: dict[str, list[float]] = {c: [] for c in configs}
    thread: dict[str, list[float]] = {c: [] for c in configs}
    with tempfile.TemporaryDirectory() as out:
        for r in range(args.rounds):
            order = configs if r % 2 == 0 else configs[::-1]
            for c in order:
                w, p, t = run(c, args.steps, args, out)
                wall[c].append(w)
                cpu[c].append(p)
                thread[c].append(t)
    print(f"model: {params / 1e6:.2f}M parameters, {layers} layers, batch {args.batch}, {args.device}, "
          f"{args.threads} thread(s); {args.rounds} rounds x {args.steps} steps")  # fmt: skip
    if args.rounds:
        med = {k: {c: statistics.median(v[c]) for c in configs} for k, v in
               (("wall", wall), ("cpu", cpu), ("thread", thread))}  # fmt: skip
        print(f"{'config':8} {'wall ms/step':>13} {'overhead':>9} {'cpu ms/step':>12} {'overhead':>9} "
              f"{'thread ms/step':>15} {'overhead':>9}")  # fmt: skip
        for c in configs:
            cells = [(med[k][c], 100 * (med[k][c] / med[k]["none"] - 1)) for k in ("wall", "cpu", "thread")]
            row = [f"{v * 1e3:{w}.2f} {o:8.1f}%" for (v, o), w in zip(cells, (13, 12, 15), strict=True)]
            print(f"{c:8} " + " ".join(row))
        for k in ("cpu", "thread"):
            over_all, over_hand = med[k]["all"] - med[k]["none"], med[k]["hand"] - med[k]["none"]
            ratio = over_hand / over_all if over_all > 0 else float("inf")
            print(f"hand-written loop's overhead / every-collection's ({k}): {ratio:.1f}x (goal >= 3x)")
        for k in ("cpu", "thread"):
            watch = 100 * (med[k]["watch"] / med[k]["none"] - 1)
            over_init = 100 * (med[k]["watch"] / med[k]["init"] - 1)
            print(f"watch's steps between saved ones ({k}, across processes): {watch:.2f} % over none, "
                  f"{over_init:.2f} % over init (see paired below)")  # fmt: skip
    if args.paired:
        with tempfile.TemporaryDirectory() as out:
            report_paired(paired(args, out))
    print("command: .venv/bin/python benchmarks/bench_debug_overhead.py " + " ".join(
        f"--{k} {v}" for k, v in vars(args).items()))  # fmt: skip


if __name__ == "__main__":
    main()
