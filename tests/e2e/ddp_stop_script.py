"""One rank of a two-process gloo run that opts in to ``stop_on=["ExplodingTensor"]`` against the
hub (started by ``test_e2e_model_rules``): each rank trains its own small MLP under ``ph.watch``
(no DDP: a gradient all-reduce would carry rank 1's NaN to rank 0's own reductions, and a rank
stopped alone would leave the other waiting in it); rank 1's input holds a NaN at step
``NAN_STEP``. Rank 1's SDK sees it in its own reductions and stops at the next step; rank 0's
series stay finite, so only the hub (rank 1's finding, read on rank 0's job) stops it. Both
ranks meet in a gloo barrier once stopped. Prints ``STOPPED`` and ``FINISHED`` lines."""

from __future__ import annotations

import json
import os
import time

import torch
import torch.distributed as dist

import profilerhub as ph

NAN_STEP = 5


def main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ones = torch.ones(1)
    dist.all_reduce(ones)
    assert ones.item() == dist.get_world_size() == 2
    ph.init(job=os.environ["JOB"], rules=["ExplodingTensor"], stop_on=["ExplodingTensor"],
            chunk_interval_s=0.5, sample_interval_s=0.5)  # fmt: skip
    torch.manual_seed(rank)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = torch.nn.CrossEntropyLoss()
    ph.watch(model, opt, loss_fn, every=1)
    dist.barrier()  # both ranks registered and watching: they start stepping together
    give_up = time.monotonic() + float(os.environ.get("GIVE_UP_S", "300"))
    stopped, i = None, 0
    try:
        while time.monotonic() < give_up:
            with ph.step(i):
                x, y = torch.randn(16, 8), torch.randint(0, 2, (16,))
                if rank == 1 and i == NAN_STEP:
                    x[0, 0] = float("nan")
                loss = loss_fn(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            i += 1
            time.sleep(0.05)  # a step's pace: rank 0 goes on until the hub asks it to stop
    except ph.StopTraining as stop:
        stopped = {"rule": stop.rule, "step": i, "rank": rank}
    print("STOPPED " + json.dumps(stopped), flush=True)
    print("FINISHED " + json.dumps(ph.finish()), flush=True)
    dist.barrier()  # both ranks stopped: neither is left waiting
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
