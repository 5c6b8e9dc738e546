"""Records ``h200_run/``: a training run on an NVIDIA GPU through the SDK, as it lands in a local
output folder (``ph.init(output=...)``): the PyTorch profiler's trace of two steps under the
"full" preset (CUDA kernels, copies, memory, shapes, stacks, modules), NVML's GPU samples, the
steps and annotations, and ``ph.watch``'s tensors. The fixture of the tests that ingest a real
GPU run (``tests/worker/test_worker_gpu_run.py``); recorded on a lent H200 with::

    python tests/data/cuda/record_h200_run.py OUT_FOLDER

A small vision-transformer-like model (a convolution stem, two encoder layers whose attention
runs the fused SDPA kernels, a classifier head) in bfloat16 autocast with a fused AdamW; each
step copies its batch from pinned host memory (``Memcpy HtoD``); an eval pass every 4 steps.
Re-recording changes every figure: the tests compute what they expect from the files.
``h200_run.recorded.json`` beside it says where and with what it was recorded. This recording was
made with the SDK before its GPU reductions were laid out in rows: the trace's costliest kernels
(indexFuncLargeIndex, 42.9 of 59 ms of kernel time) are ph.watch's own segment sums of step 4.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import torch
from torch import nn

import profilerhub as ph

STEPS = 12


class Net(nn.Module):
    def __init__(self, width: int = 256, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 4, stride=4), nn.GELU())
        layer = nn.TransformerEncoderLayer(width, 4, 4 * width, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.stem(x).flatten(2).transpose(1, 2)  # (N, 64, width) for 32x32 images
        return self.head(self.encoder(tokens).mean(dim=1))


def main(out: Path) -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = Net().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=device == "cuda")
    loss_fn = nn.CrossEntropyLoss()
    images = torch.randn(64, 3, 32, 32).pin_memory() if device == "cuda" else torch.randn(64, 3, 32, 32)
    labels = torch.randint(0, 10, (64,))
    ph.init(
        job="h200-run",
        output=str(out),
        torch_profiler={"preset": "full", "wait": 4, "warmup": 1, "active": 2},
        sample_interval_s=0.1,
        rules=["VanishingGradient", "ExplodingTensor", "LossNotDecreasing"],
    )
    ph.watch(model, opt, loss_fn, every=4)
    started = time.perf_counter()
    for step in range(STEPS):
        with ph.step(step):
            with ph.annotate("data"):
                x = images.to(device, non_blocking=True)
                y = labels.to(device, non_blocking=True)
            with ph.annotate("forward"), torch.autocast(device, dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            with ph.annotate("backward"):
                loss.backward()
            with ph.annotate("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        ph.log_metric("train:loss", float(loss), step=step)
        if step % 4 == 3:
            with ph.mode("eval"), torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16):
                loss_fn(model(images.to(device)), labels.to(device))
    if device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - started
    summary = ph.finish()
    folder = Path(summary["location"])
    about = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "steps": STEPS,
        "seconds": round(elapsed, 3),
    }
    (out / "h200_run.recorded.json").write_text(json.dumps(about, indent=1) + "\n")  # beside, not in it
    print(json.dumps(about), folder)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            print(f"{path.stat().st_size:>10}  {path.relative_to(folder)}")
    shutil.make_archive(str(out / "h200_run"), "gztar", folder)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
