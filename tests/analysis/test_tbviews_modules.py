"""The module view (``tbviews/modules.py``) against figures worked out here another way.

The fixture is a real CPU run under the "full" preset (``tests/data/torch/record_modules_trace.py``).
What the tests expect is computed from the file's raw events by time containment alone (which
module event lies inside which, which operator events lie directly inside a module), not from the
Python call ids the view itself follows, so the two are independent readings of one trace.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from profilerhub_analysis.tbviews import tb_views

FIXTURE = Path(__file__).parents[1] / "data" / "torch" / "modules_cpu_3steps.pt.trace.json.gz"


@pytest.fixture(scope="module")
def raw() -> bytes:
    return gzip.decompress(FIXTURE.read_bytes())


@pytest.fixture(scope="module")
def view(raw: bytes) -> list[dict[str, Any]]:
    got = tb_views(raw)["tb_modules"]
    assert got is not None
    return got


def _flat(rows: list[dict[str, Any]], parent: str | None = None) -> list[tuple[str | None, dict[str, Any]]]:
    out = []
    for row in rows:
        out.append((parent, row))
        out.extend(_flat(row["children"], row["name"]))
    return out


def _by_containment(raw: bytes) -> dict[str, dict[str, Any]]:
    """Per module name: calls, host total, direct child operators, and the enclosing module's name."""
    events = [e for e in json.loads(raw)["traceEvents"] if e.get("ph") == "X"]
    mods = [
        e for e in events if e.get("cat") == "python_function" and "Python module id" in e.get("args", {})
    ]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    inside = lambda a, b: a is not b and b["ts"] <= a["ts"] and a["ts"] + a["dur"] <= b["ts"] + b["dur"]  # noqa: E731
    out: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"calls": 0, "host": 0.0, "ops": 0, "parents": set()}
    )
    for m in mods:
        name = m["name"].removeprefix("nn.Module: ")
        row = out[name]
        row["calls"] += 1
        row["host"] += m["dur"]
        around = [p for p in mods if inside(m, p)]
        innermost = min(around, key=lambda p: p["dur"], default=None)
        row["parents"].add(None if innermost is None else innermost["name"].removeprefix("nn.Module: "))
        for op in ops:
            # a direct child: inside m, and inside no other operator or module that is inside m
            if inside(op, m) and not any(inside(op, o) and inside(o, m) for o in ops + mods):
                row["ops"] += 1
    return out


def test_every_module_of_the_model_is_in_the_tree_under_its_parent(
    raw: bytes, view: list[dict[str, Any]]
) -> None:
    expected = _by_containment(raw)
    flat = _flat(view)
    assert sorted(row["name"] for _, row in flat) == sorted(expected)  # each module once
    for parent, row in flat:
        assert expected[row["name"]]["parents"] == {parent}, row["name"]
    assert [r["name"] for r in view] == ["Net_0"]
    net = view[0]
    assert [c["name"] for c in net["children"]] == [
        "Sequential_0", "AdaptiveAvgPool2d_0", "Linear_0", "Block_0", "Linear_2"
    ]  # fmt: skip


def test_calls_host_time_and_operators_equal_the_raw_events(raw: bytes, view: list[dict[str, Any]]) -> None:
    expected = _by_containment(raw)
    for _, row in _flat(view):
        want = expected[row["name"]]
        assert row["calls"] == want["calls"], row["name"]
        assert row["host_total_us"] == pytest.approx(want["host"], abs=2e-3), row["name"]
        assert row["operators"] == want["ops"], row["name"]
        assert row["mean_us"] == pytest.approx(
            row["host_total_us"] / row["calls"], abs=2e-3
        )  # CPU: no device
        assert 0 < row["host_self_us"] <= row["host_total_us"]
        assert row["device_total_us"] == row["device_self_us"] == 0
    block = next(row for _, row in _flat(view) if row["name"] == "Block_0")
    assert block["calls"] == 6  # called twice per forward, three profiled steps


def test_a_parents_self_time_is_its_total_less_its_children_and_operators(
    raw: bytes, view: list[dict[str, Any]]
) -> None:
    events = [e for e in json.loads(raw)["traceEvents"] if e.get("ph") == "X"]
    sequential = [e for e in events if e.get("name") == "nn.Module: Sequential_0"]
    names = ("nn.Module: Conv2d_0", "nn.Module: BatchNorm2d_0", "nn.Module: ReLU_0")
    children = [e for e in events if "Python module id" in e.get("args", {}) and e["name"] in names]
    assert len(sequential) == 3 and len(children) == 9
    row = next(row for _, row in _flat(view) if row["name"] == "Sequential_0")
    want = sum(e["dur"] for e in sequential) - sum(e["dur"] for e in children)  # no operator of its own
    assert row["operators"] == 0
    assert row["host_self_us"] == pytest.approx(want, abs=2e-3)


def _trace(events: list[dict[str, Any]]) -> bytes:
    return json.dumps({"traceEvents": events}).encode()


def _ev(name: str, ts: float, dur: float, cat: str = "cpu_op", **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def _mod(
    name: str, ts: float, dur: float, pid: int, parent: int | None, module_id: int = 0
) -> dict[str, Any]:
    return _ev(f"nn.Module: {name}", ts, dur, "python_function",
               **{"Python id": pid, "Python parent id": parent, "Python module id": module_id})  # fmt: skip


def test_a_trace_without_modules_has_no_module_view() -> None:
    doc = _trace([_ev("ProfilerStep#1", 0, 100), _ev("aten::mm", 10, 20)])
    assert tb_views(doc)["tb_modules"] is None


def test_a_module_called_inside_an_operator_is_in_the_hierarchy_but_has_no_figures() -> None:
    # The plugin reaches modules through steps and modules only (module_op._get_module_list).
    doc = _trace([
        _ev("ProfilerStep#1", 0, 1000),
        _ev("train.py(1): step", 1, 998, "python_function", **{"Python id": 1, "Python parent id": None}),
        _mod("Outer_0", 10, 500, 2, 1),
        _ev("aten::linear", 20, 100),
        _mod("Inner_0", 200, 100, 3, 2),
        _ev("my_op", 600, 300),
        _mod("Hidden_0", 650, 100, 4, 1),  # inside an operator: no call counted, the plugin's rule
    ])  # fmt: skip
    rows = tb_views(doc)["tb_modules"]
    assert [r["name"] for r in rows] == ["Outer_0", "Hidden_0"]
    outer, hidden = rows
    assert (outer["calls"], outer["operators"], outer["host_total_us"]) == (1, 1, 500)
    assert outer["host_self_us"] == 500 - 100 - 100
    assert [c["name"] for c in outer["children"]] == ["Inner_0"]
    assert hidden["calls"] == 0 and hidden["mean_us"] == 0  # the plugin fails here (KeyError)


def test_a_cycle_in_the_python_ids_ends_and_deep_nesting_needs_no_recursion() -> None:
    depth = 3000
    events = [_ev("ProfilerStep#1", 0, 10 * depth + 10)]
    events += [_mod(f"M{i}_0", i, 10 * depth - 2 * i, i + 1, i or None, module_id=i) for i in range(depth)]
    events.append(_mod("Loop_0", 5, 1, 10**6, 10**6))  # its own parent
    rows = tb_views(_trace(events))["tb_modules"]
    node, levels = rows[0], 1
    while node["children"]:
        node, levels = node["children"][0], levels + 1
    assert levels == depth
    assert all(r["name"] != "Loop_0" for r in rows)
