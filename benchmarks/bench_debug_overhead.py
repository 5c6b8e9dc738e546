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
Goals: ``watch`` < 2 %, ``all`` at least 3x cheaper than ``hand``. ``--device cuda`` runs the
same on a GPU (wall time, synchronised).

    .venv/bin/python benchmarks/bench_debug_overhead.py [--steps 30] [--rounds 5] [--device cpu]
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
    for i in range(steps + 2):  # two warm-up steps
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
        if args.device == "cuda":
            torch.cuda.synchronize()
        if i >= 2:
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
            threads.append(time.thread_time() - t0)
    for h in hooks:
        h.remove()
    ph.finish()
    return statistics.median(walls), statistics.median(cpus), statistics.median(threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
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
    med = {k: {c: statistics.median(v[c]) for c in configs} for k, v in
           (("wall", wall), ("cpu", cpu), ("thread", thread))}  # fmt: skip
    print(f"{'config':8} {'wall ms/step':>13} {'overhead':>9} {'cpu ms/step':>12} {'overhead':>9} "
          f"{'thread ms/step':>15} {'overhead':>9}")  # fmt: skip
    for c in configs:
        cells = [(med[k][c], 100 * (med[k][c] / med[k]["none"] - 1)) for k in ("wall", "cpu", "thread")]
        print(
            f"{c:8} "
            + " ".join(f"{v * 1e3:{w}.2f} {o:8.1f}%" for (v, o), w in zip(cells, (13, 12, 15), strict=True))
        )
    for k in ("cpu", "thread"):
        over_all, over_hand = med[k]["all"] - med[k]["none"], med[k]["hand"] - med[k]["none"]
        ratio = over_hand / over_all if over_all > 0 else float("inf")
        print(f"hand-written loop's overhead / every-collection's ({k}): {ratio:.1f}x (goal >= 3x)")
    for k in ("cpu", "thread"):
        watch = 100 * (med[k]["watch"] / med[k]["none"] - 1)
        print(f"defaults' overhead ({k}): {watch:.2f} % over none, "
              f"{100 * (med[k]['watch'] / med[k]['init'] - 1):.2f} % over init (goal < 2 %)")  # fmt: skip
    print("command: .venv/bin/python benchmarks/bench_debug_overhead.py " + " ".join(
        f"--{k} {v}" for k, v in vars(args).items()))  # fmt: skip


if __name__ == "__main__":
    main()
