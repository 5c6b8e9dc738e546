"""The trial API (``profilerhub.debug``) by smdebug's method names, on a real ``ph.watch`` run read
from its local folder: names by collection and regex, steps by mode, reductions with ``abs``,
smdebug's derived reductions, values, and ``wait_for_steps`` on a run still going."""

from __future__ import annotations

import threading
from pathlib import Path
from types import ModuleType

import pytest

import profilerhub as ph
from profilerhub.debug import (
    ModeKeys,
    NoMoreData,
    TensorUnavailable,
    TensorUnavailableForStep,
    create_trial,
)
from tests.support.hub import wait_for
from tests.support.watchtrain import ALL, Recorder


def test_the_trial_answers_smdebugs_methods_as_torch_computes_them(torch: ModuleType, tmp_path: Path) -> None:
    rec = Recorder(torch)
    ph.init(job="trial", output=str(tmp_path))
    ph.watch(rec.model, rec.opt, rec.loss_fn, collections=ALL, every=1)
    rec.train(5)  # eval (two batches) after steps 0, 2 and 4
    trial = create_trial(ph.finish()["location"])

    grads = trial.tensor_names(collection="gradients")
    assert grads == sorted({n for n, _, _ in rec.seen if n.startswith("gradients/")}) and grads
    assert trial.tensor_names(regex=r"^weights/0\.") == ["weights/0.weight"]
    assert trial.tensor_names(collection="weights", regex="4") == ["weights/4.weight"]
    assert trial.steps() == [0, 1, 2, 3, 4] and trial.steps(mode=ModeKeys.EVAL) == [0, 1, 2, 3, 4, 5]
    assert set(trial.steps(ModeKeys.GLOBAL)) >= set(trial.steps(mode=ModeKeys.EVAL))
    assert trial.workers() == [0] and trial.has_passed_step(4) and not trial.has_passed_step(5)

    for (name, mode, step), t in rec.seen.items():
        if mode != "train" or name.startswith("labels/"):
            continue
        x, tensor = t.detach().double(), trial.tensor(name)
        want = {
            ("max", True): x.abs().max(), ("mean", True): x.abs().mean(), ("sum", True): x.abs().sum(),
            ("sum", False): x.sum(), ("variance", False): x.var(unbiased=False), ("max", False): x.max(),
        }  # fmt: skip
        for (stat, use_abs), value in want.items():
            got = tensor.reduction_value(step, stat, abs=use_abs)
            slack = 1e-6 * float(x.abs().sum()) + 1e-9  # float32 sums: error ~ eps * l1
            assert got == pytest.approx(float(value), rel=2e-5, abs=slack), (name, step, stat, use_abs)
        if x.numel() > 1 and x.min() < 0 < x.max():  # min |x| of a tensor of both signs: not kept
            with pytest.raises(ValueError, match="changes sign"):
                tensor.reduction_value(step, "min", abs=True)

    losses = trial.tensor("losses/loss")
    evals = {s: float(t) for (n, m, s), t in rec.seen.items() if n == "losses/loss" and m == "eval"}
    assert losses.values(mode="eval") == pytest.approx(evals)
    assert trial.tensor("losses/eval").values() == pytest.approx(evals)  # smdebug-style name
    with pytest.raises(TensorUnavailable):
        trial.tensor("gradients/nope")
    with pytest.raises(TensorUnavailableForStep):
        trial.tensor("weights/0.weight").value(2)  # reductions only: not saved whole


def test_wait_for_steps_returns_as_the_run_records_them_and_ends_with_it(
    torch: ModuleType, tmp_path: Path
) -> None:
    rec = Recorder(torch)
    ph.init(job="waited", output=str(tmp_path), chunk_interval_s=0.2)
    ph.watch(rec.model, rec.opt, rec.loss_fn)
    go_on = threading.Event()

    def training() -> None:
        rec.train(3, eval_every=100)
        go_on.wait()
        rec.train(2, eval_every=100, start=3)

    worker = threading.Thread(target=training)
    worker.start()
    try:
        # the run's folder is made by its background writer, not by ph.init: await it
        wait_for(lambda: (tmp_path / "waited").is_dir(), "the run's output folder")
        trial = create_trial(str(tmp_path / "waited"))
        trial.wait_for_steps([0, 2], timeout=120)  # the run is still going: its chunks so far
        assert trial.steps() == [0, 1, 2]
    finally:
        go_on.set()
        worker.join()
    ph.finish()
    trial.wait_for_steps([4], timeout=120)
    assert trial.steps() == [0, 1, 2, 3, 4]
    with pytest.raises(NoMoreData, match="ended without steps"):
        trial.wait_for_steps([9], timeout=120)
