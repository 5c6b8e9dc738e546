"""``ph.watch`` on a ``torch.compile``'d model and under mixed precision (autocast + GradScaler):
what it records equals what torch computes on the same tensors, in float32, with the gradients as
the optimizer sees them (unscaled)."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import profilerhub as ph
from profilerhub.debug import create_trial
from tests.support.watchtrain import torch_stats


def _own_grads(opt: Any, model: Any, seen: dict[tuple[str, int], Any], step: list[int]) -> None:
    """The test's own record of each gradient where the optimizer reads it (its step pre-hook)."""

    def hook(_opt: Any, _args: Any, _kwargs: Any) -> None:
        for n, p in model.named_parameters():
            if p.grad is not None:
                seen[(f"gradients/{n}", step[0])] = p.grad.detach().clone()

    opt.register_step_pre_hook(hook)


def _assert_same(torch: ModuleType, trial: Any, seen: dict[tuple[str, int], Any]) -> None:
    assert seen
    for (name, step), t in seen.items():
        got = trial.tensor(name).reduction_values(step)
        want = torch_stats(torch, t)
        for stat in ("min", "max", "mean", "l1", "l2", "zero_frac", "numel"):
            assert got[stat] == pytest.approx(want[stat], rel=2e-5, abs=1e-7), (name, step, stat)


def compiled_run(
    torch: ModuleType, out: Path, model: Any, compiled: Any, opt: Any, steps: int, batch: Any
) -> tuple[Any, dict[tuple[str, int], Any]]:
    """``steps`` steps of ``compiled`` (``model`` compiled) under ph.watch, the test's own copies
    of its weights, gradients and losses beside them: the trial and those copies."""
    loss_fn = torch.nn.CrossEntropyLoss()
    ph.init(job="compiled", output=str(out))
    ph.watch(compiled, opt, loss_fn, collections=["weights", "gradients", "losses", "activations"], every=1)
    seen: dict[tuple[str, int], Any] = {}
    step = [0]
    _own_grads(opt, model, seen, step)
    for i in range(steps):
        step[0] = i
        with ph.step(i):
            x, y = batch()
            for n, p in model.named_parameters():
                if not n.endswith("bias"):
                    seen[(f"weights/{n}", i)] = p.detach().clone()
            loss = loss_fn(compiled(x), y)
            loss.backward()
            seen[("losses/loss", i)] = loss.detach().clone()
            opt.step()
            opt.zero_grad()
    return create_trial(ph.finish()["location"]), seen


def amp_run(
    torch: ModuleType, out: Path, device: str
) -> tuple[Any, dict[tuple[str, int], Any], dict[int, Any]]:
    """Three steps of bfloat16 autocast with a GradScaler on ``device``, step 1 overflowing: the
    trial, the test's own gradients and losses, and the first layer's outputs."""
    torch.manual_seed(6)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
    opt, loss_fn = torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler(device, init_scale=2.0**10)
    ph.init(job="amp", output=str(out))
    ph.watch(model, opt, loss_fn, collections=["gradients", "losses", "activations"], every=1)
    seen: dict[tuple[str, int], Any] = {}
    step = [0]
    _own_grads(opt, model, seen, step)
    outs: dict[int, Any] = {}
    model[0].register_forward_hook(lambda _m, _a, out: outs.__setitem__(step[0], out.detach().clone()))
    for i in range(3):
        step[0] = i
        with ph.step(i):
            x, y = torch.randn(8, 6, device=device), torch.randint(0, 3, (8,), device=device)
            with torch.autocast(device, dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            scaled = scaler.scale(loss)
            (scaled * math.inf if i == 1 else scaled).backward()  # step 1 overflows: skipped
            seen[("losses/loss", i)] = loss.detach().clone()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
    return create_trial(ph.finish()["location"]), seen, outs


# Dynamo, tracing around the (eager, graph-breaking) activation hooks, warns about a non-leaf .grad.
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")
def test_a_compiled_model_records_torchs_own_statistics(torch: ModuleType, tmp_path: Path) -> None:
    """``aot_eager`` compiles the forward and the backward graphs (as inductor does, without
    generating code): weights, gradients, updates and losses are read outside the graphs."""
    torch.manual_seed(5)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    compiled = torch.compile(model, backend="aot_eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    trial, seen = compiled_run(
        torch, tmp_path, model, compiled, opt, 3, lambda: (torch.randn(8, 6), torch.randint(0, 3, (8,)))
    )
    _assert_same(torch, trial, seen)
    assert trial.tensor("activations/1").steps() == [0, 1, 2]  # the hooks' graph break, recorded


def test_autocast_and_grad_scaler_record_float32_statistics_of_the_unscaled_gradients(
    torch: ModuleType, tmp_path: Path
) -> None:
    """bfloat16 autocast: the layers' outputs are bfloat16, reduced in float32; GradScaler: the
    gradients are read after its ``unscale_`` (the optimizer's pre-hook), so they are the true
    ones, not 1024x; a step the scaler skips (an Inf in the scaled gradients) records no gradients
    or weights, since the optimizer did not step, but its loss."""
    trial, seen, outs = amp_run(torch, tmp_path, "cpu")
    assert outs[0].dtype == torch.bfloat16
    _assert_same(torch, trial, seen)
    assert trial.tensor("gradients/0.weight").steps() == [0, 2]  # the skipped step has none
    assert trial.tensor("losses/loss").steps() == [0, 1, 2]
    for i in (0, 1, 2):
        got = trial.tensor("activations/0").reduction_value(i, "l2")
        assert got == pytest.approx(float(outs[i].float().norm()), rel=1e-6)
