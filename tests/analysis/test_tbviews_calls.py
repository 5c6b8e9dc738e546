"""The Operators view over a time range (``tbviews/calls.py``): over the whole trace it is the
plugin's Operators view (``views.operators``) row for row; over a range it is the view of only the
calls that start there, worked out here from the call trees directly."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from profilerhub_analysis.tbviews import views
from profilerhub_analysis.tbviews.calls import operator_calls, operators_between, pack, unpack
from profilerhub_analysis.tbviews.parse import parse
from profilerhub_analysis.tbviews.tree import Forest, build

TRACES = [
    "torch-cpu/mlp_cpu_10steps.pt.trace.json",  # shapes, CPU only
    "hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",  # kernels
    "hta/tests/data/negative_queue_length_values_check/rank0.json.gz",  # 109k events, tensor cores
]
MODULES = Path(__file__).parents[1] / "data" / "torch" / "modules_cpu_3steps.pt.trace.json.gz"


def _forest(path: Path) -> Forest:
    data = path.read_bytes()
    return build(parse(gzip.decompress(data) if path.suffix == ".gz" else data))


def _same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert [r["name"] for r in got] == [r["name"] for r in want]
    for g, w in zip(got, want, strict=True):
        assert g.keys() == w.keys()
        for key, value in w.items():
            if isinstance(value, float):
                assert g[key] == pytest.approx(value, rel=1e-9, abs=1e-9), (w["name"], key)
            else:
                assert g[key] == value, (w["name"], key)


@pytest.mark.parametrize("trace", TRACES, ids=lambda t: Path(t).name.split(".")[0])
def test_over_the_whole_trace_the_calls_give_the_plugins_operators_view(shared_dir: Path, trace: str) -> None:
    forest = _forest(shared_dir / "traces" / trace)
    by_name, by_shape = views.operators(forest)
    calls = unpack(pack(operator_calls(forest)))  # through the stored form
    got_name, got_shape, n = operators_between(calls)
    _same(got_name, by_name)
    _same(got_shape, by_shape)
    assert n == sum(r["calls"] for r in by_name) > 0


def test_a_range_counts_only_the_calls_that_start_in_it() -> None:
    forest = _forest(MODULES)
    ops = [n for n in forest.nodes if n.is_operator]
    t0 = sorted(o.ts for o in ops)[len(ops) // 3]
    t1 = sorted(o.ts for o in ops)[2 * len(ops) // 3]
    inside = [o for o in ops if t0 <= o.ts < t1]
    expected: dict[str, dict[str, float]] = {}
    for o in inside:
        row = expected.setdefault(o.name, {"calls": 0, "host_self_us": 0.0, "host_total_us": 0.0})
        row["calls"] += 1
        row["host_self_us"] += o.host_self_us
        row["host_total_us"] += o.end - o.ts
    by_name, by_shape, n = operators_between(operator_calls(forest), t0, t1)
    assert n == len(inside) and 0 < n < len(ops)
    assert {r["name"]: r["calls"] for r in by_name} == {k: v["calls"] for k, v in expected.items()}
    for r in by_name:
        assert r["host_self_us"] == pytest.approx(expected[r["name"]]["host_self_us"])
        assert r["host_total_us"] == pytest.approx(expected[r["name"]]["host_total_us"])
    assert sum(r["calls"] for r in by_shape) == n
    assert [r["host_self_us"] for r in by_name] == sorted((r["host_self_us"] for r in by_name), reverse=True)
    assert operators_between(operator_calls(forest), t1, t1 + 1e-3)[2] <= 1
    assert operators_between(operator_calls(forest), -2.0, -1.0) == ([], [], 0)


def test_the_stored_calls_hold_no_pickle_and_a_trace_without_operators_packs_empty() -> None:
    forest = build(parse(b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]}'))
    blob = pack(operator_calls(forest))
    with np.load(io.BytesIO(blob), allow_pickle=False) as npz:  # refuses object arrays
        assert set(npz.files) >= {"ts", "name", "pair", "pair_name", "pair_shape", "labels"}
    assert operators_between(unpack(blob)) == ([], [], 0)


def test_calls_kept_before_the_pairs_were_answer_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``tb_calls.npz`` from an ingest before the (name, shape) pairs were kept is numbered when
    read; and the tables do not depend on how many calls a chunk holds."""
    calls = operator_calls(_forest(MODULES))
    older = {k: v for k, v in calls.items() if not k.startswith("pair")}
    older["shape"] = calls["pair_shape"][calls["pair"]]  # the column such a file holds instead
    t0 = float(np.quantile(calls["ts"], 0.2))
    want = operators_between(calls, t0)
    assert want[2] > 0 and len(want[1]) > 1
    assert operators_between(unpack(pack(older)), t0) == want
    assert "shape" not in unpack(pack(older))  # numbered into pairs when read
    monkeypatch.setattr("profilerhub_analysis.scratch.CHUNK", 7)  # many chunks, each pair split across them
    chunked = operators_between(unpack(pack(older)), t0)
    assert [(r["name"], r["input_shape"], r["calls"]) for r in chunked[1]] == [
        (r["name"], r["input_shape"], r["calls"]) for r in want[1]
    ]
    for got, expect in zip(chunked[0], want[0], strict=True):
        assert got["host_self_us"] == pytest.approx(expect["host_self_us"], rel=1e-12)
