"""A small real PyTorch training loop instrumented with the SDK, shared by the tests."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import profilerhub as ph

PRINTED_LOSS = {"Name": "train:printed_loss", "Regex": r"loss=([0-9.]+)"}
ANNOTATIONS = ("data", "forward", "backward", "optimizer")


def train(
    torch: ModuleType,
    steps: int,
    *,
    print_loss: bool = True,
    after_step: Callable[[int], None] | None = None,
) -> list[float]:
    """Train a two-layer MLP on random data for ``steps`` steps; returns the losses."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(256, 32), torch.randn(256, 1)

    @ph.annotate("evaluate")
    def evaluate() -> float:
        with torch.no_grad():
            return float(torch.nn.functional.mse_loss(model(inputs), targets))

    losses = []
    for i in range(steps):
        with ph.step(i):
            with ph.annotate("data"):
                idx = torch.randint(0, 256, (32,))
                x, y = inputs[idx], targets[idx]
            with ph.annotate("forward"):
                loss = torch.nn.functional.mse_loss(model(x), y)
            with ph.annotate("backward"):
                loss.backward()
            with ph.annotate("optimizer"):
                opt.step()
                opt.zero_grad()
        losses.append(loss.item())
        ph.log_metric("train:loss", losses[-1], step=i)
        if print_loss:
            print(f"step={i} loss={losses[-1]:.6f}")
        if after_step is not None:
            after_step(i)
    evaluate()
    return losses
