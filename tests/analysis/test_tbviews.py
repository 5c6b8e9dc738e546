"""The TensorBoard plugin's rules (profilerhub_analysis.tbviews) pinned on tiny hand-made traces:
what the oracle's real traces check only in bulk."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from profilerhub_analysis.reader import file_chunks
from profilerhub_analysis.tbviews import OWN_ID_NOTE, tb_views
from profilerhub_analysis.tbviews.parse import parse, parse_chunks

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
CPU_TRACE = TRACES / "torch-cpu" / "mlp_cpu_10steps.pt.trace.json"


def _x(cat: str, name: str, ts: float, dur: float, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _views(*events: dict[str, Any]) -> dict[str, Any]:
    return tb_views(orjson.dumps({"traceEvents": list(events)}))


def test_an_operator_and_its_same_name_only_child_count_as_one_call_with_the_childs_launch() -> None:
    v = _views(
        _x("cpu_op", "ProfilerStep#1", 0, 100),
        _x("cpu_op", "aten::mm", 10, 50, **{"External id": 1}),
        _x("cpu_op", "aten::mm", 12, 40, **{"External id": 2}),
        _x("cuda_runtime", "cudaLaunchKernel", 20, 5, correlation=7, **{"External id": 2}),
        _x("kernel", "sgemm", 95, 30, tid=7, correlation=7, device=0, **{"External id": 2}),
    )
    mm = next(r for r in v["tb_operators"] if r["name"] == "aten::mm")
    assert mm["calls"] == 1  # merged
    assert mm["device_self_us"] == 30 and mm["host_total_us"] == 50
    assert mm["host_self_us"] == 50 - 5  # the child's children and runtimes became its own
    assert mm["tc_eligible"] is True  # aten::mm is on the plugin's list
    step = v["tb_overview"]["steps"][0]
    assert step["step"] == "1" and step["end_us"] == 125  # the step ends when its kernel ends
    assert step["kernel_us"] == 30 and step["runtime_us"] == 5
    assert (
        sum(step[k] for k in step if k.endswith("_us") and k not in ("total_us", "start_us", "end_us")) == 125
    )
    assert v["tb_kernels_by_op"][0]["operator"] == "aten::mm"
    assert v["tb_notes"] == []


def test_a_kernel_no_launch_claims_hangs_on_the_root_of_each_tree_with_a_step() -> None:
    v = _views(
        _x("cpu_op", "ProfilerStep#3", 0, 100, tid=1),
        _x("gpu_user_annotation", "ProfilerStep#3", 0, 100, tid=9),
        _x("kernel", "orphan", 10, 4, tid=9, correlation=99, device=0),
    )
    row = v["tb_kernels_by_op"][0]
    assert (row["operator"], row["calls"]) == ("CallTreeRoot", 2)  # twice: two trees hold a step (T5)
    assert v["tb_kernels"][0]["calls"] == 1


def test_memory_records_count_on_the_deepest_operator_and_its_callers() -> None:
    mem = {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "s": "t"}
    v = _views(
        _x("cpu_op", "aten::linear", 0, 100),
        _x("cpu_op", "aten::empty", 10, 10),
        {**mem, "ts": 12, "args": {"Device Type": 0, "Device Id": -1, "Bytes": 256}},
        {**mem, "ts": 50, "args": {"Device Type": 0, "Device Id": -1, "Bytes": -64}},
    )
    rows = {r["name"]: r for r in v["tb_memory"]}
    assert (
        rows["aten::empty"]["self_allocation_count"] == 1
        and rows["aten::empty"]["size_increase_bytes"] == 256
    )
    linear = rows["aten::linear"]
    assert (linear["self_size_increase_bytes"], linear["size_increase_bytes"]) == (-64, 192)
    assert (linear["allocation_count"], linear["self_allocation_count"], linear["calls"]) == (1, 0, 1)


def test_a_trace_whose_launches_carry_their_own_correlation_as_external_id_says_so() -> None:
    v = _views(
        _x("cpu_op", "aten::add", 0, 10, **{"External id": 5}),
        _x("cuda_runtime", "cudaLaunchKernel", 2, 1, correlation=5, **{"External id": 5}),
        _x("kernel", "add", 5, 1, tid=7, correlation=5, device=0),
    )
    assert v["tb_notes"] == [OWN_ID_NOTE]


def test_hopper_tensor_core_kernels_the_plugins_names_miss_count_in_the_current_figure_and_a_note() -> None:
    def launched(name: str, ts: float, corr: int) -> list[dict[str, Any]]:
        ext = {"External id": corr + 100}  # not the correlation id (OWN_ID_NOTE)
        return [
            _x("cpu_op", "aten::mm", ts, 40, **ext),
            _x("cuda_runtime", "cudaLaunchKernel", ts + 5, 5, correlation=corr, **ext),
            _x("kernel", name, ts + 20, 30, tid=7, correlation=corr, device=0, **ext),
        ]

    v = _views(
        _x("cpu_op", "ProfilerStep#1", 0, 400),
        *launched("nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT", 10, 1),  # cuBLAS on a Hopper GPU
        *launched("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7", 110, 2),
        *launched("volta_h884gemm_64x64_ldg8_nn", 210, 3),  # one of the plugin's own
        *launched("void at::native::vectorized_elementwise_kernel<4>", 310, 4),
    )
    facts = v["tb_facts"]
    assert facts["tc_used_pct"] == pytest.approx(25.0)  # the plugin's figure, as it would show it
    assert facts["tc_used_current_pct"] == pytest.approx(75.0)
    assert [r["tensor_cores"] for r in v["tb_kernels"]] == [False, False, True, False]  # the plugin's
    assert len(v["tb_notes"]) == 1 and "75.0 %" in v["tb_notes"][0] and "25.0 %" in v["tb_notes"][0]


def test_a_field_of_an_unexpected_type_costs_that_event_not_the_document() -> None:
    v = _views(
        _x("cpu_op", "aten::add", 0, 10),
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 20, "dur": 5, "args": []},
        _x("cpu_op", "aten::sub", 30, 5),
    )
    assert {r["name"] for r in v["tb_operators"]} == {"aten::add", "aten::sub"}


def test_one_event_whose_args_is_null_costs_no_other_event_of_a_real_trace(tmp_path: Path) -> None:
    """``"args": null`` sends its slice down the event-by-event path; there every other event is
    decoded as the fast path decodes it (it once lost each event with shapes: 1431 of the CPU
    trace's 1620), and the null one is read without arguments, as the main reader reads it."""
    doc = json.loads(CPU_TRACE.read_text())
    clean = parse(CPU_TRACE.read_bytes())
    doc["traceEvents"].insert(5, {**_x("cpu_op", "aten::odd", 0, 1), "args": None})
    path = tmp_path / "null_args.json"
    path.write_bytes(orjson.dumps(doc))
    for got in (parse(path.read_bytes()), parse_chunks(file_chunks(path))):
        assert (len(got), got.skipped) == (len(clean) + 1, 0)
        assert sorted(got.names) == sorted([*clean.names, "aten::odd"])
        assert len(got.raws) == len(clean.raws)  # every shape still read
    with_null = tb_views(parse_chunks(file_chunks(path)))
    assert {r["name"] for r in with_null["tb_operators_by_shape"]} - {"aten::odd"} == {
        r["name"] for r in tb_views(clean)["tb_operators_by_shape"]
    }


def test_the_distributed_view_splits_each_step_into_computation_overlap_communication_and_other() -> None:
    ar = {"External id": 9, "Input Dims": [[1024, 256]], "Input type": ["float"]}
    v = _views(
        _x("cpu_op", "ProfilerStep#1", 0, 100),
        _x("cpu_op", "nccl:all_reduce", 10, 30, **ar),  # a collective: communication 10-40
        _x("cuda_runtime", "cudaLaunchKernel", 12, 2, correlation=3, **{"External id": 4}),
        _x("cpu_op", "aten::mm", 11, 5, **{"External id": 4}),
        _x("kernel", "sgemm", 30, 40, tid=7, correlation=3, device=0),  # computation 30-70
    )
    d = v["tb_distributed"]
    step = d["steps"][0]
    # by hand: computation |30,70| = 40, communication |10,40| = 30, overlap |30,40| = 10,
    # other = step (100) + overlap - computation - communication = 40
    assert (step["computation_us"], step["communication_us"], step["overlap_us"], step["other_us"]) == (
        40,
        30,
        10,
        40,
    )
    assert d["collectives"] == [
        {"name": "nccl:all_reduce", "calls": 1, "bytes": 1024 * 256 * 4, "total_us": 30.0}
    ]


def test_memory_events_pair_each_allocation_with_its_free_and_name_the_operator() -> None:
    import json

    from profilerhub_analysis.tbviews import tb_views

    def mem(ts: float, nbytes: int, addr: int) -> dict[str, Any]:
        args = {"Device Type": 0, "Device Id": -1, "Bytes": nbytes, "Addr": addr, "Total Allocated": 0}
        return {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "args": args}

    def op(name: str, ts: float, dur: float) -> dict[str, Any]:
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}

    events = [
        op("ProfilerStep#1", 0, 1000), op("aten::empty", 10, 20), op("aten::mm", 100, 50),
        mem(5, -64, 7),  # freed, allocated before the profile
        mem(15, 256, 1),  # in aten::empty
        mem(120, 1024, 2),  # in aten::mm, never freed
        mem(130, -256, 1),
        mem(200, 512, 1), mem(210, 128, 1),  # the same address again without a free: the first stays alive
    ]  # fmt: skip
    got = tb_views(json.dumps({"traceEvents": events}).encode())["tb_memory_events"]
    rows = [
        (e["operator"], e["size_bytes"], e["alloc_us"], e["free_us"], e["duration_us"]) for e in got["events"]
    ]
    assert rows == [
        (None, 64, None, 5, None),
        ("aten::empty", 256, 15, 130, 115),
        ("aten::mm", 1024, 120, None, None),
        (None, 512, 200, None, None),
        (None, 128, 210, None, None),
    ]
    assert got["total"] == 5


def test_the_trees_are_the_same_whatever_the_nesting_loops_chunk(
    shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nesting runs over chunks of nodes (``tree._NEST_CHUNK``), its stack carried from one
    to the next; a chunk of 7 cuts every tree of a real trace with modules many times over."""
    from profilerhub_analysis.tbviews import tree, views_and_calls

    data = gzip.decompress(
        (shared_dir / "traces/torch-cpu/mlp_cpu_10steps_stack.pt.trace.json.gz").read_bytes()
    )
    whole = views_and_calls(data)
    monkeypatch.setattr(tree, "_NEST_CHUNK", 7)
    cut = views_and_calls(data)
    assert json.dumps(cut[0], sort_keys=True) == json.dumps(whole[0], sort_keys=True)
    assert whole[0]["tb_modules"] and whole[0]["tb_operators"]
    for key, col in whole[1].items():
        assert (cut[1][key] == col) if isinstance(col, list) else bool((cut[1][key] == col).all()), key


def test_an_id_of_an_unhashable_type_is_matched_by_its_value_not_an_error() -> None:
    """A list where an External id belongs (no JSON number) is coded by its value: the launch still
    finds its operator, nothing raises."""
    views = _views(
        _x("cpu_op", "aten::mm", 0, 10, **{"External id": [1]}),
        _x("cuda_runtime", "cudaLaunchKernel", 1, 2, **{"External id": [1], "correlation": 7}),
        _x("kernel", "k", 20, 4, correlation=7, device=0),
    )
    assert [(r["name"], r["device_self_us"]) for r in views["tb_operators"]] == [("aten::mm", 4)]
    assert views["tb_kernels"][0]["calls"] == 1


def test_byte_counts_in_the_memory_columns_are_written_as_integers() -> None:
    def mem(ts: float, nbytes: float, addr: int, allocated: float, reserved: float | None) -> dict[str, Any]:
        args = {"Device Type": 0, "Device Id": -1, "Bytes": nbytes, "Addr": addr}
        args["Total Allocated"] = allocated
        if reserved is not None:
            args["Total Reserved"] = reserved
        return {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "s": "t", "ts": ts, "args": args}

    v = _views(
        _x("cpu_op", "ProfilerStep#1", 0, 1000),
        _x("cpu_op", "aten::empty", 10, 20),
        mem(15, 256, 1, 256, 2048),
        mem(130, -256, 1, 0, None),
    )
    stored = json.loads(orjson.dumps(v))  # as ingest writes tb_views.json and the app hands it over
    (curve,) = stored["tb_memory_curve"]
    assert curve["allocated_bytes"] == [256, 0] and all(type(x) is int for x in curve["allocated_bytes"])
    assert curve["reserved_bytes"] == [2048, None] and type(curve["peak_allocated_bytes"]) is int
    (event,) = stored["tb_memory_events"]["events"]
    assert type(event["size_bytes"]) is int and event["size_bytes"] == 256
    assert type(event["alloc_us"]) is float  # a time stays a float: only whole-number columns change


def test_a_column_with_a_fraction_keeps_its_floats() -> None:
    from profilerhub_analysis.tbviews.memory import integral

    assert integral(np.array([1.0, 2.5, np.nan])) == [1.0, 2.5, None]
    assert [type(x) for x in integral(np.array([3.0, np.nan, 4.0]))] == [int, type(None), int]
    assert integral(np.array([2.0**60])) == [2.0**60]  # beyond an exact double's integers: left alone
