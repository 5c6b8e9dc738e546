"""The newer analyses (oracle's expected-more sections, compare) pinned on tiny hand-made traces."""

from __future__ import annotations

import pytest

from profilerhub_analysis.compare import compare, op_totals, profile
from profilerhub_analysis.gpu_metrics import gpu_metrics, step_window
from profilerhub_analysis.launch import launch_stats
from profilerhub_analysis.memory import memory_bw
from profilerhub_analysis.report import analyze_store
from profilerhub_analysis.streams import idle_breakdown, queue_length
from profilerhub_analysis.temporal import comm_comp_overlap

from .tracegen import annotation, event, kernel, memcpy, runtime, store_of


def test_idle_breakdown_has_a_row_per_stream_even_with_one_op() -> None:
    store = store_of([kernel("a", 0, 5, stream=7), kernel("b", 0, 5, stream=8), kernel("c", 50, 5, stream=8)])
    rows = {(r["device"], r["stream"]): r for r in idle_breakdown(store)}
    assert rows[(0, 7)] == {
        "device": 0, "stream": 7, "ops": 1, "idle_us": 0.0, "host_wait_us": 0.0,
        "kernel_wait_us": 0.0, "other_us": 0.0,
    }  # fmt: skip
    assert rows[(0, 8)]["ops"] == 2 and rows[(0, 8)]["other_us"] == 45.0


def test_idle_gap_after_an_overlapping_op_uses_the_latest_end_so_far() -> None:
    # b starts inside a and ends first; c's gap is measured from a's end (40), not b's (15)
    store = store_of([kernel("a", 0, 40), kernel("b", 10, 5), kernel("c", 50, 1)])
    (row,) = idle_breakdown(store)
    assert row["idle_us"] == 10.0 and row["kernel_wait_us"] == 10.0


def test_queue_length_counts_launched_but_not_started_ops() -> None:
    store = store_of(
        [
            runtime("cudaLaunchKernel", 0, 1, 1),
            runtime("cudaLaunchKernel", 2, 1, 2),
            kernel("a", 5, 10, 1),
            kernel("b", 15, 10, 2),
        ]
    )
    (row,) = queue_length(store)
    # +1 at 0, +1 at 2, -1 at 5, -1 at 15: 1, 2, 1, 0
    assert (row["count"], row["min"], row["max"], row["mean"]) == (4, 0.0, 2.0, 1.0)
    assert row["p50"] == 1.0


def test_queue_length_takes_starts_before_launches_at_equal_times() -> None:
    store = store_of(
        [runtime("cudaLaunchKernel", 0, 1, 1), kernel("a", 5, 1, 1), runtime("cudaLaunchKernel", 5, 1, 2),
         kernel("b", 9, 1, 2)]
    )  # fmt: skip
    (row,) = queue_length(store)
    assert row["max"] == 1.0  # 1, 0, 1, 0: never 2


def test_launch_stats_count_short_ops_and_outliers() -> None:
    store = store_of(
        [
            runtime("cudaLaunchKernel", 0, 10, 1),
            kernel("short", 11, 5, 1),  # shorter than its 10 µs launch
            runtime("cudaLaunchKernel", 20, 60, 2),
            kernel("slow_launch", 81, 100, 2),  # launch over 50 µs
            runtime("cudaLaunchKernel", 200, 5, 3),
            kernel("late", 400, 10, 3),  # 195 µs after its launch returned
        ]
    )
    assert launch_stats(store) == [
        {"device": 0, "launches": 3, "short_gpu_ops": 1, "runtime_outliers": 1, "launch_delay_outliers": 1}
    ]


def test_comm_comp_overlap_is_the_share_of_comm_time_under_compute() -> None:
    store = store_of(
        [
            kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 0, 100, stream=20),
            kernel("gemm", 50, 100, stream=7),
            memcpy("HtoD", 0, 100, stream=9),  # memory: neither side
        ]
    )
    (row,) = comm_comp_overlap(store)
    assert row == {
        "device": 0, "comm_kernels": 1, "comm_us": 100.0, "compute_us": 100.0,
        "overlap_us": 50.0, "overlap_pct": 50.0,
    }  # fmt: skip
    assert comm_comp_overlap(store_of([kernel("gemm", 0, 1)])) == []


def test_memory_bw_peak_sums_concurrent_copies_and_busy_is_the_union() -> None:
    bw = "memory bandwidth (GB/s)"
    store = store_of(
        [
            memcpy("HtoD", 0, 10, nbytes=1000, stream=7, **{bw: 2.0}),
            memcpy("HtoD", 5, 10, nbytes=1000, stream=8, **{bw: 3.0}),
            memcpy("HtoD", 15, 10, nbytes=1000, stream=7, **{bw: 4.0}),  # starts as the 2nd ends
        ]
    )
    (row,) = memory_bw(store)
    assert (row["count"], row["bytes"], row["busy_us"]) == (3, 3000, 25.0)
    assert row["peak_gbps"] == pytest.approx(5.0)
    (no_figure,) = memory_bw(store_of([memcpy("DtoH", 0, 1, nbytes=8)]))
    assert no_figure["peak_gbps"] is None and no_figure["ops_without_bandwidth"] == 1


def test_gpu_metrics_measure_inside_the_step_window() -> None:
    store = store_of(
        [
            event("ProfilerStep#1", "cpu_op", 0, 100),
            runtime("cudaLaunchKernel", 10, 1, 1),
            kernel("a", 150, 50, 1, **{"blocks per SM": 0.5, "est. achieved occupancy %": 40}),
            kernel("outside", 500, 50, **{"blocks per SM": 2.0, "est. achieved occupancy %": 90}),
        ]
    )
    # the step stretches to its kernel's end: W = [0, 200]
    assert step_window(store) == (0, 200_000)
    (row,) = gpu_metrics(store)
    assert row["gpu_utilization_pct"] == pytest.approx(25.0)
    assert row["sm_efficiency_pct"] == pytest.approx(12.5)
    assert row["achieved_occupancy_pct"] == pytest.approx(40.0)


def test_gpu_metrics_without_steps_use_the_cpu_op_span() -> None:
    store = store_of([event("aten::mm", "cpu_op", 0, 100), kernel("a", 0, 50)])
    (row,) = gpu_metrics(store)
    assert row["gpu_utilization_pct"] == pytest.approx(50.0)
    assert row["sm_efficiency_pct"] is None and row["achieved_occupancy_pct"] is None


def test_compare_lists_every_name_with_deltas_sorted_by_impact() -> None:
    base_events = [annotation("fwd", 0, 10), kernel("gemm", 0, 5), kernel("relu", 10, 1)]
    test_events = [annotation("fwd", 0, 10), kernel("gemm", 0, 9), annotation("new", 20, 2)]
    base, test = store_of(base_events), store_of(test_events)
    result = compare(
        profile([analyze_store(base)], op_totals(base)), profile([analyze_store(test)], op_totals(test))
    )["compare"]
    ops = {o["name"]: o for o in result["ops"]}
    assert ops["gemm"]["diff_total_us"] == 4.0 and ops["gemm"]["change"] == "="
    assert ops["relu"]["change"] == "-" and ops["new"]["change"] == "+"
    assert [o["name"] for o in result["ops"]][0] == "gemm"
    assert result["added"] == ["new"] and result["removed"] == ["relu"]
    assert [k["name"] for k in result["kernels"]] == ["gemm", "relu"]
