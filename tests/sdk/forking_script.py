"""Run as a script by test_fork.py: a run whose process forks (DataLoader workers, os.fork).

Neither child may upload anything or hang; the parent finishes through the atexit hook.
"""

from __future__ import annotations

import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset

import profilerhub as ph


class Numbers(Dataset):
    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int) -> torch.Tensor:
        with ph.annotate("worker-load"):  # runs in a forked worker: must record nothing
            ph.log_metric("worker:metric", i)
            print(f"loss={i}")
            return torch.tensor([float(i)])


def main() -> None:
    ph.init(
        job=sys.argv[1], chunk_interval_s=0.05, metric_definitions=[{"Name": "l", "Regex": r"loss=(\d+)"}]
    )
    loader = DataLoader(Numbers(), batch_size=4, num_workers=2, multiprocessing_context="fork")
    for i, batch in enumerate(loader):
        with ph.step(i), ph.annotate("train"):
            batch.sum()
    pid = os.fork()
    if pid == 0:
        with ph.annotate("child"):
            ph.log_metric("child:metric", 1.0)
        sys.exit(0)  # runs the child's atexit hooks: they must not finish the parent's job
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # No ph.finish(): the atexit hook finishes the run.


if __name__ == "__main__":
    main()
