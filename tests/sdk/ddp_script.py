"""One rank of a two-process gloo run under ph.watch (started by tests/sdk/test_watch.py)."""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist

import profilerhub as ph


def main() -> None:
    out = sys.argv[1]
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    ph.init(job="ddp", output=out, chunk_interval_s=0.2)
    ph.watch(model, opt, loss_fn, every=1)
    torch.manual_seed(100 + rank)  # each rank its own batches
    for i in range(3):
        with ph.step(i):
            loss = loss_fn(model(torch.randn(6, 4)), torch.randint(0, 2, (6,)))
            loss.backward()
            opt.step()
            opt.zero_grad()
    ph.finish()
    dist.destroy_process_group()
    os._exit(0)


if __name__ == "__main__":
    main()
