"""The model-debugging table: reductions, histogram bins, the SDK record form, merge, pack."""

from __future__ import annotations

import math

import numpy as np
import pytest

from profilerhub_analysis import tensor_records as R
from profilerhub_analysis import tensors as T


def test_reductions_count_nonfinite_apart_and_the_histogram_holds_every_finite_value() -> None:
    x = np.array([0.0, 1e-12, 0.5, 0.98, 1e7, np.nan, np.inf, -2.0], np.float32)
    stats, hist = T.reduce_array(x)
    s = dict(zip(T.STATS, stats, strict=True))
    finite = x[np.isfinite(x)].astype(np.float64)
    assert s["min"] == -2.0 and s["max"] == pytest.approx(1e7)
    assert s["mean"] == pytest.approx(finite.mean()) and s["std"] == pytest.approx(finite.std())
    assert s["l1"] == pytest.approx(np.abs(finite).sum()) and s["l2"] == pytest.approx(np.linalg.norm(finite))
    assert (s["nan"], s["inf"], s["zero_frac"], s["numel"]) == (1, 1, 1 / 8, 8)
    assert hist.sum() + s["nan"] + s["inf"] == s["numel"]
    assert hist[T.ZERO_BIN] == 1 and hist[1] == 1 and hist[-1] == 1  # 0, below 2^-34, at/above 2^20
    assert T.hist_fraction(hist, 0.97)[0] == pytest.approx(3 / 6)  # 0.98, 1e7, -2 (0.97 -> 0.96875)
    assert T.hist_fraction(hist, 0, 0.03)[0] == pytest.approx(2 / 6)  # 0 and 1e-12


def test_a_tensor_with_no_finite_value_has_nan_statistics() -> None:
    stats, hist = T.reduce_array(np.array([np.nan, np.inf]))
    s = dict(zip(T.STATS, stats, strict=True))
    assert math.isnan(s["l2"]) and (s["nan"], s["inf"]) == (1, 1) and hist.sum() == 0


def _table() -> T.TensorTable:
    rng = np.random.default_rng(0)
    recs = [
        R.record(
            "train", i, {"gradients/a.weight": rng.normal(size=(3, 4)), "losses/loss": np.array(1 / (i + 1))}
        )
        for i in range(4)
    ]
    recs.append(R.record("eval", 0, {"losses/loss": np.array(2.0)}, global_step=3))
    recs.append(R.record("train", 2, {"weights/a.weight": np.ones((3, 4))}, rank=1))
    return T.TensorTable.from_records(recs)


def test_the_table_lists_names_collections_modes_ranks_and_steps() -> None:
    t = _table()
    assert t.names() == ["gradients/a.weight", "losses/loss", "weights/a.weight"]
    assert t.names(collection="losses") == ["losses/loss"] and t.names(regex=r"a\.w") == t.names()[::2]
    assert t.collections() == ["gradients", "losses", "weights"] and t.modes() == ["train", "eval"]
    assert t.ranks() == [0, 1] and t.steps() == [0, 1, 2, 3] and t.steps("eval") == [0]
    assert t.shape("gradients/a.weight") == (3, 4)
    steps, values = t.series("losses/loss", "mean")
    assert steps.tolist() == [0, 1, 2, 3] and values.tolist() == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4])
    steps, counts = t.hist("losses/loss", "eval")
    assert steps.tolist() == [0] and counts.shape == (1, T.N_BINS)
    assert t.global_steps("losses/loss", "eval")[0] == 3
    assert t.series("weights/a.weight", "l2", rank=1)[1][0] == pytest.approx(math.sqrt(12))
    assert t.series("weights/a.weight", "l2", rank=0)[0].size == 0
    with pytest.raises(KeyError):
        t.series("gradients/nope", "l2")
    with pytest.raises(KeyError):
        t.series("losses/loss", "median")


def test_merge_keeps_the_later_row_of_a_key_and_pack_round_trips() -> None:
    t = _table()
    again = T.TensorTable.from_records([R.record("train", 1, {"losses/loss": np.array(9.0)})])
    merged = t.merge(again)
    assert len(merged) == len(t) and merged.series("losses/loss", "max")[1][1] == 9.0
    back = T.TensorTable.unpack(merged.pack())
    assert back.names() == merged.names() and back.index() == merged.index()
    for name in merged.names():
        for mode in merged.modes():
            for rank in merged.ranks():
                a, b = merged.rows(name, mode, rank), back.rows(name, mode, rank)
                np.testing.assert_array_equal(a.step, b.step)
                np.testing.assert_array_equal(a.counts, b.counts)
                np.testing.assert_array_equal(a.stats["l2"], b.stats["l2"])
    steps, grid = merged.matrix(["gradients/a.weight", "losses/loss"], "l2")
    assert grid.shape == (2, len(steps)) and not np.isnan(grid).any()


def test_class_counts_of_integer_labels_merge_pad_and_round_trip() -> None:
    first = [R.record("train", s, {"labels/loss": np.array([0, 0, 1, -100])}) for s in (0, 1)]
    later = [R.record("train", 1, {"labels/loss": np.array([3, 0]), "losses/loss": np.array(1.0)}),
             R.record("eval", 0, {"labels/loss": np.array([2])})]  # fmt: skip
    floats = R.record("train", 0, {"labels/soft": np.array([0.2, 0.8])})
    assert floats["classes"] == [None] and first[0]["classes"] == [[2, 1]]  # ignore_index left out
    table = T.TensorTable.from_records(first).merge(T.TensorTable.from_records([*later, floats]))
    for t in (table, T.TensorTable.unpack(table.pack())):
        steps, counts = t.class_counts("labels/loss")
        assert steps.tolist() == [0, 1] and counts.tolist() == [
            [2, 1, 0, 0],
            [1, 0, 0, 1],
        ]  # step 1: the later
        assert t.class_counts("labels/loss", "eval")[1].tolist() == [[0, 0, 1, 0]]
        with pytest.raises(KeyError, match="no class counts"):
            t.class_counts("labels/soft")
    assert T.TensorTable.unpack(T.TensorTable.from_records([floats]).pack()).classes.counts.size == 0
