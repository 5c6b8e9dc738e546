"""A small CPU training run under ``ph.watch`` that keeps its own copy of every watched tensor, so a
test can compute the statistics itself, with torch, and compare them with what a trial reads."""

from __future__ import annotations

import math
from collections import defaultdict
from types import ModuleType
from typing import Any

import numpy as np

import profilerhub as ph
from profilerhub_analysis.tensors import HIST_EDGES, N_BINS

ALL = ["weights", "biases", "gradients", "activations", "losses", "optimizer_variables", "labels"]
STATS = ("min", "max", "mean", "std", "l1", "l2", "nan", "inf", "zero_frac", "numel")


def torch_stats(torch: ModuleType, t: Any) -> dict[str, float]:
    """The statistics of ``t`` as a person computes them with torch (finite elements only)."""
    x = t.detach().cpu().double().reshape(-1)
    f = x[torch.isfinite(x)]
    out = {
        "nan": float(torch.isnan(x).sum()),
        "inf": float(torch.isinf(x).sum()),
        "zero_frac": float((x == 0).sum()) / x.numel(),
        "numel": float(x.numel()),
    }
    if f.numel():
        out |= {
            "min": float(f.min()),
            "max": float(f.max()),
            "mean": float(f.mean()),
            "std": float(f.std(unbiased=False)),
            "l1": float(f.abs().sum()),
            "l2": float(f.norm()),
        }
    else:
        out |= dict.fromkeys(("min", "max", "mean", "std", "l1", "l2"), math.nan)
    return out


def torch_hist(torch: ModuleType, t: Any) -> list[int]:
    """The log-magnitude histogram of ``t``, with torch's own bucketize over the shared edges."""
    x = t.detach().cpu().float().reshape(-1)
    a = x[torch.isfinite(x)].abs()
    bins = torch.bucketize(a, torch.tensor(HIST_EDGES, dtype=torch.float32), right=True) + 1
    bins[a == 0] = 0
    return torch.bincount(bins, minlength=N_BINS).tolist()


class Recorder:
    """The model, optimizer and loss of ``train``, with the test's own copies of the tensors
    (the model and its batches on ``device``)."""

    def __init__(self, torch: ModuleType, seed: int = 0, device: str = "cpu") -> None:
        torch.manual_seed(seed)
        nn = torch.nn
        self.torch = torch
        self.device = device
        self.model = nn.Sequential(
            nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 12), nn.ReLU(), nn.Linear(12, 3)
        ).to(device)
        self.model[2].bias.requires_grad_(False)  # a parameter without a gradient
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9)
        self.loss_fn = nn.CrossEntropyLoss()
        self.seen: dict[tuple[str, str, int], Any] = {}  # (name, mode, step) -> tensor copy
        self._acts: dict[str, Any] = defaultdict(list)
        for name, m in self.model.named_modules():
            if name:
                m.register_forward_hook(self._keep(name))

    def _keep(self, name: str) -> Any:
        def hook(module: Any, args: Any, out: Any) -> None:
            self._acts[name] = out.detach().clone()

        return hook

    def _snap(self, mode: str, step: int, loss: Any, y: Any) -> None:
        for name, out in self._acts.items():
            self.seen[(f"activations/{name}", mode, step)] = out
        self.seen[("losses/loss", mode, step)] = loss.detach().clone()
        self.seen[("labels/loss", mode, step)] = y.clone()

    def batch(self) -> tuple[Any, Any]:
        torch, device = self.torch, self.device
        return torch.randn(8, 6, device=device), torch.randint(0, 3, (8,), device=device)

    def train(self, steps: int, *, eval_every: int = 2, nan_at: int | None = None, start: int = 0) -> None:
        """Steps ``start`` … ``start + steps - 1``; eval steps go on counting across calls."""
        torch = self.torch
        eval_step = getattr(self, "_eval_step", -1)
        for i in range(start, start + steps):
            with ph.step(i):
                x, y = self.batch()
                if nan_at is not None and i >= nan_at:
                    x[0, 0] = math.nan
                loss = self.loss_fn(self.model(x), y)
                loss.backward()
                self._snap("train", i, loss, y)
                before = {}
                for n, p in self.model.named_parameters():
                    kind = "biases" if n.endswith("bias") else "weights"
                    self.seen[(f"{kind}/{n}", "train", i)] = p.detach().clone()
                    before[n] = p.detach().clone()
                    if p.grad is not None:
                        self.seen[(f"gradients/{n}", "train", i)] = p.grad.detach().clone()
                self.opt.step()
                for n, p in self.model.named_parameters():
                    self.seen[(f"optimizer_variables/{n}:update", "train", i)] = p.detach() - before[n]
                self.opt.zero_grad()
            if i % eval_every == 0:
                with ph.mode("eval"), torch.no_grad():
                    for _ in range(2):
                        eval_step += 1
                        vx, vy = self.batch()
                        self._snap("eval", eval_step, self.loss_fn(self.model(vx), vy), vy)
        self._eval_step = eval_step


def assert_trial_matches(torch: ModuleType, trial: Any, rec: Recorder, *, rank: int = 0) -> int:
    """Every tensor the recorder kept, at every step, has the trial's reductions; returns how many
    (name, mode, step) were compared."""
    compared = 0
    for (name, mode, step), t in sorted(rec.seen.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        got = trial.tensor(name).reduction_values(step, mode=mode, worker=rank)
        want = torch_stats(torch, t)
        for s in STATS:
            assert np.isclose(got[s], want[s], rtol=2e-5, atol=1e-7, equal_nan=True), (
                name,
                mode,
                step,
                s,
                got,
                want,
            )
        steps, counts = trial.table.hist(name, mode, rank)
        assert counts[list(steps).index(step)].tolist() == torch_hist(torch, t), (name, mode, step)
        if name.startswith("labels/"):  # and each class's count
            steps, classes = trial.table.class_counts(name, mode, rank)
            got_counts = classes[list(steps).index(step)].tolist()
            want_counts = torch.bincount(t).tolist()
            assert got_counts[: len(want_counts)] == want_counts and not any(got_counts[len(want_counts) :])
        compared += 1
    return compared


def watched_run(
    torch: ModuleType, out: Any, *, steps: int = 4, **watch: Any
) -> tuple[dict[str, bytes], Recorder]:
    """A local run of ``Recorder`` watched with every collection every step (and one tensor saved
    whole, ``full_tensors``): its raw files by relative path, and the recorder."""
    from pathlib import Path

    rec = Recorder(torch)
    ph.init(job="watched", output=str(out), chunk_interval_s=0.2)
    watch = {"collections": ALL, "every": 1, "full_tensors": [r"^weights/0\.weight$"]} | watch
    ph.watch(rec.model, rec.opt, rec.loss_fn, **watch)
    rec.train(steps)
    folder = Path(ph.finish()["location"])
    files = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    return files, rec


def gloo_ranks(
    script: Any, args: list[str], env: dict[str, str], logs: Any = None, world: int = 2
) -> list[Any]:
    """Each rank of a ``world``-process gloo run of ``script`` (``torch.distributed``'s env://
    variables set, a free port on loopback), started; with ``logs`` (a folder) each rank's output
    goes to ``rank<r>.log`` there. The processes, by rank."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(world):
        dist = {"RANK": str(rank), "WORLD_SIZE": str(world),
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}  # fmt: skip
        out = None if logs is None else (logs / f"rank{rank}.log").open("wb")
        procs.append(subprocess.Popen([sys.executable, str(script), *args], env=env | dist, stdout=out,
                                      stderr=None if out is None else subprocess.STDOUT))  # fmt: skip
        if out is not None:
            out.close()  # the child has its own copy
    return procs


def gloo_run(out: Any) -> dict[int, Any]:
    """A two-process gloo run of ``tests/sdk/ddp_script.py`` (DDP under ``ph.watch`` every step,
    each rank its own batches) written to the folder ``out``: each rank's run folder."""
    import json
    import os
    from pathlib import Path

    script = Path(__file__).parents[1] / "sdk" / "ddp_script.py"
    procs = gloo_ranks(script, [str(out)], os.environ | {"PROFILERHUB_URL": ""})
    assert [p.wait(timeout=240) for p in procs] == [0, 0]
    runs = [p for p in Path(out).iterdir() if (p / "job.json").exists()]
    return {int(json.loads((p / "job.json").read_text())["rank"]): p for p in runs}
