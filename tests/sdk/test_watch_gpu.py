"""``ph.watch`` on a GPU: the values of a step are copied to the host without the training thread
waiting for them (``HostCopy``), read when the collector builds the record, and looked at for a
NaN a step or two later; the batched reductions, the labels' counts and the copies make no host
synchronisation, so the CPU keeps queueing work ahead of the GPU.

Each test runs twice: on ``cuda`` where torch sees a GPU (skipped elsewhere, CI included, with the
reason printed), and on ``cpu-deferred``, the CPU with its values taken through the same deferred
path (``_watch_host.DEFERRED``), so that path's bookkeeping is tested on every machine. On a GPU
machine, without the suite's services::

    python -m pytest --noconftest -p no:cacheprovider tests/sdk/test_watch_gpu.py
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import profilerhub as ph
from profilerhub import _watch_host
from profilerhub.debug import create_trial
from tests.sdk.test_watch_precision import _assert_same, amp_run, compiled_run
from tests.support.watchtrain import ALL, Recorder, assert_trial_matches

torch = pytest.importorskip("torch")
GPU = torch.cuda.is_available()
NO_GPU = "no CUDA device here (torch.cuda.is_available() is False): run this file on a GPU machine"


@pytest.fixture(autouse=True)
def _no_run_left_behind() -> Iterator[None]:
    ph.finish(timeout=2)
    yield
    ph.finish(timeout=2)


ON_GPU = pytest.param("cuda", marks=pytest.mark.skipif(not GPU, reason=NO_GPU))


@pytest.fixture(params=["cpu-deferred", ON_GPU])
def device(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "cpu-deferred":
        monkeypatch.setattr(_watch_host, "DEFERRED", frozenset({"cuda", "cpu"}))
        return "cpu"
    return "cuda"


def test_every_collection_every_step_equals_torchs_statistics(device: str, tmp_path: Path) -> None:
    rec = Recorder(torch, device=device)
    ph.init(job="gpu", output=str(tmp_path), chunk_interval_s=0.2)
    ph.watch(rec.model, rec.opt, rec.loss_fn, collections=ALL, every=1)
    rec.train(5)
    trial = create_trial(ph.finish()["location"])
    assert assert_trial_matches(torch, trial, rec) > 150
    assert trial.tensor("labels/loss").steps() == [0, 1, 2, 3, 4]


def test_a_nan_stops_an_opted_in_run_at_the_next_step_or_the_one_after(
    device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rings shipped at every step's end (``SHIP_S`` 0): the SDK-side ExplodingTensor reads a
    GPU's step once its copies have landed, at its own end if they have, else at the next step's
    end, which waits for them."""
    monkeypatch.setattr(_watch_host, "SHIP_S", 0.0)
    rec = Recorder(torch, device=device)
    ph.init(job="nan", output=str(tmp_path), rules=["ExplodingTensor"], stop_on=["ExplodingTensor"])
    ph.watch(rec.model, rec.opt, rec.loss_fn)
    with pytest.raises(ph.StopTraining) as stop:
        rec.train(12, nan_at=3, eval_every=100)
    assert stop.value.rule == "ExplodingTensor"
    stopped_after = ph.current_run().current_step  # type: ignore[union-attr]
    assert stopped_after in ((3,) if device == "cpu" else (3, 4)), stopped_after
    trial = create_trial(ph.finish()["location"])
    assert math.isnan(trial.tensor("losses/loss").values()[3])
    assert trial.tensor("losses/loss").steps() == list(range(stopped_after + 1))


def test_at_the_default_shipping_interval_a_nan_still_stops_the_run(device: str, tmp_path: Path) -> None:
    """Steps of a few milliseconds: the rings go to the host every ``SHIP_S`` (0.25 s), so the
    run stops some steps after the NaN, not at the next one; the NaN's step is in the records."""
    rec = Recorder(torch, device=device)
    ph.init(job="nan-later", output=str(tmp_path), rules=["ExplodingTensor"], stop_on=["ExplodingTensor"])
    ph.watch(rec.model, rec.opt, rec.loss_fn)
    with pytest.raises(ph.StopTraining):
        rec.train(100_000, nan_at=3, eval_every=1_000_000)
    stopped_after = ph.current_run().current_step  # type: ignore[union-attr]
    trial = create_trial(ph.finish()["location"])
    assert math.isnan(trial.tensor("losses/loss").values()[3])
    assert trial.tensor("losses/loss").steps() == list(range(stopped_after + 1))


def test_a_full_ring_keeps_the_values_that_do_not_fit_on_the_device(
    device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ring of 6 values: a step's loss goes in, its 8 labels do not fit and take the per-step
    way (counted on the device, copied at the step's end); every step's values arrive all the same."""
    monkeypatch.setattr(_watch_host, "RING_VALUES", 6)
    rec = Recorder(torch, device=device)
    ph.init(job="ring", output=str(tmp_path))
    ph.watch(rec.model, rec.opt, rec.loss_fn, collections=["losses", "labels"], every=1)
    rec.train(6, eval_every=100)
    trial = create_trial(ph.finish()["location"])
    rec.seen = {k: t for k, t in rec.seen.items() if k[0].startswith(("losses/", "labels/"))}
    assert assert_trial_matches(torch, trial, rec) == 2 * 6 + 2 * 2  # train steps and step 0's evals


def test_labels_are_counted_per_class_with_ignore_index_left_out(device: str, tmp_path: Path) -> None:
    """On a GPU the counts are a scatter into the logits' classes (no bincount, which reads the
    labels' maximum back); the record's counts end at the largest class seen, as bincount's do."""
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-100)
    model = torch.nn.Linear(4, 6).to(device)
    ph.init(job="labels", output=str(tmp_path))
    ph.watch(model, loss_fn=loss_fn, collections=["labels"], every=1)
    batches = [[0, 2, 2, -100, 1], [3, 3, -100, -100, 0]]
    for i, labels in enumerate(batches):
        with ph.step(i):
            y = torch.tensor(labels, device=device)
            loss_fn(model(torch.randn(5, 4, device=device)), y).backward()
    trial = create_trial(ph.finish()["location"])
    steps, counts = trial.table.class_counts("labels/loss", "train", 0)
    assert list(steps) == [0, 1]
    assert counts[0].tolist()[:4] == [1, 1, 2, 0] and counts[1].tolist()[:4] == [1, 0, 0, 2]
    assert not counts[:, 4:].any()


def test_autocast_and_grad_scaler_record_the_unscaled_float32_statistics(device: str, tmp_path: Path) -> None:
    trial, seen, outs = amp_run(torch, tmp_path, device)
    assert outs[0].dtype == torch.bfloat16
    _assert_same(torch, trial, seen)
    assert trial.tensor("gradients/0.weight").steps() == [0, 2]
    assert trial.tensor("losses/loss").steps() == [0, 1, 2]


@pytest.mark.skipif(not GPU, reason=NO_GPU)
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")
def test_an_inductor_compiled_model_on_the_gpu_records_torchs_statistics(tmp_path: Path) -> None:
    """torch.compile's default backend (Inductor, Triton kernels on the GPU), hooks included."""
    torch.manual_seed(5)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def batch() -> tuple[Any, Any]:
        return torch.randn(32, 64, device="cuda"), torch.randint(0, 10, (32,), device="cuda")

    trial, seen = compiled_run(torch, tmp_path, model, torch.compile(model), opt, 4, batch)
    _assert_same(torch, trial, seen)
    assert trial.tensor("activations/1").steps() == [0, 1, 2, 3]


@pytest.mark.skipif(not GPU, reason=NO_GPU)
def test_watched_steps_make_no_host_synchronisation(tmp_path: Path) -> None:
    """Under ``torch.cuda.set_sync_debug_mode("warn")`` (a warning at every synchronising call):
    a bare training step makes none, and neither does one under ph.watch with every collection
    saved, the labels counted and the loss read, once the first step has made the lookup tables."""
    rec = Recorder(torch, device="cuda")
    ph.init(job="sync", output=str(tmp_path), chunk_interval_s=0.2)
    ph.watch(rec.model, rec.opt, rec.loss_fn, collections=ALL, every=1)
    rec.train(1, eval_every=100)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rec.train(6, start=1, eval_every=100)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    syncs = [str(w.message) for w in caught if "synchroniz" in str(w.message).lower()]
    assert not syncs, syncs[:5]
    trial = create_trial(ph.finish()["location"])
    assert assert_trial_matches(torch, trial, rec) > 150
