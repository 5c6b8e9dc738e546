"""Records ``modules_cpu_3steps.pt.trace.json.gz``: a CPU run under the SDK's "full" torch profiler
preset (shapes, memory, stacks, modules), the fixture of the module view's tests.

    .venv/bin/python tests/data/torch/record_modules_trace.py

The model nests modules three deep and calls one block twice per forward, so a module's calls,
its children and its operators can be told apart. Re-recording changes every figure; the tests
compute what they expect from the file itself.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

OUT = Path(__file__).with_name("modules_cpu_3steps.pt.trace.json.gz")


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(x)) + x


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(4)
        self.proj = nn.Linear(8 * 16, 32)
        self.block = Block(32)  # called twice per forward
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.proj(self.pool(self.stem(x)).flatten(1))
        return self.head(self.block(self.block(x)))


def main() -> None:
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        with profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=0, warmup=1, active=3),
            on_trace_ready=lambda p: p.export_chrome_trace(str(raw)),
            record_shapes=True, profile_memory=True, with_stack=True, with_modules=True,
        ) as prof:  # fmt: skip
            for _ in range(4):
                loss = nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
                prof.step()
        doc = json.loads(raw.read_text())
    OUT.write_bytes(gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), mtime=0))
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes, {len(doc['traceEvents']):,} events)")


if __name__ == "__main__":
    main()
