"""What the PyTorch profiler's options cost a training step, through the SDK (docs/sdk.md, "The full preset").

A small CPU MLP (4 x Linear 512, batch 64, SGD) runs STEPS steps in each mode, each mode in its own
process (the profiler leaves state behind): no SDK (the anchor), the SDK with the profiler's
default flags (kernels and launches only), each of the full preset's options alone, and the full
preset (``torch_profiler="full"``: shapes, memory, stacks, modules). The profiler is active on
every measured step (``{"wait": 0, "warmup": 1, "active": STEPS}``). Prints the median step time,
its ratio to the anchor, and the trace's size.

    .venv/bin/python benchmarks/bench_torch_presets.py [--steps 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = {
    "no SDK (anchor)": None,
    "default flags": {},
    "record_shapes": {"record_shapes": True},
    "profile_memory": {"profile_memory": True},
    "with_stack": {"with_stack": True},
    "with_modules": {"with_modules": True},
    'full preset ("full")': {"preset": "full"},
}


def child(mode: str, steps: int, out: str) -> None:
    import torch

    import profilerhub as ph

    torch.manual_seed(0)
    torch.set_num_threads(1)
    layers: list[torch.nn.Module] = []
    for _ in range(4):
        layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 512), torch.randn(64, 512)
    flags = MODES[mode]
    if flags is not None:
        schedule = {"wait": 0, "warmup": 1, "active": steps + 1}
        ph.init(job="presets", output=out, torch_profiler={**schedule, **flags})
    times = []
    for i in range(steps + 2):
        t0 = time.perf_counter()
        if flags is not None:
            with ph.step(i):
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
        else:
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
        if i >= 2:  # after the warm-up step
            times.append(time.perf_counter() - t0)
    if flags is not None:
        ph.finish()
    size = sum(p.stat().st_size for p in Path(out).rglob("*.json*") if "trace" in p.name)
    print(json.dumps({"median_ms": 1000 * statistics.median(times), "trace_bytes": size}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.steps, args.out)
        return
    rows = []
    for mode in MODES:
        with tempfile.TemporaryDirectory() as out:
            done = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--steps", str(args.steps), "--out", out],
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append((mode, json.loads(done.stdout.strip().splitlines()[-1])))
    anchor = rows[0][1]["median_ms"]
    print(f"{'mode':26} {'median step':>12} {'x anchor':>9} {'trace (gz)':>12}")
    for mode, r in rows:
        size = f"{r['trace_bytes'] / 1024:.0f} KiB" if r["trace_bytes"] else "-"
        print(f"{mode:26} {r['median_ms']:>9.2f} ms {r['median_ms'] / anchor:>8.2f}x {size:>12}")
    print(f"\n{args.steps} profiled steps per mode, CPU, 1 thread")
    print("command: python benchmarks/bench_torch_presets.py")


if __name__ == "__main__":
    main()
