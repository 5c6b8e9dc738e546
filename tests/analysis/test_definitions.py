"""Each analysis definition pinned on tiny hand-made traces (see docs/analysis.md)."""

from __future__ import annotations

import pytest

from profilerhub_analysis.kernels import kernel_breakdown, kernel_kinds
from profilerhub_analysis.launch import launch_latency
from profilerhub_analysis.memory import memory_ops
from profilerhub_analysis.precision import kernel_precision, precision_breakdown
from profilerhub_analysis.steps import steps
from profilerhub_analysis.streams import idle_breakdown
from profilerhub_analysis.sync import sync_ops
from profilerhub_analysis.temporal import temporal_breakdown
from profilerhub_analysis.utilization import utilization

from .tracegen import annotation, event, kernel, memcpy, memset, runtime, store_of


def test_kernels_group_by_exact_name_over_all_devices() -> None:
    store = store_of(
        [
            kernel("gemm", 0, 10, device=0),
            kernel("gemm", 20, 30, device=1),
            kernel("gemm ", 5, 1),
            kernel("relu", 40, 2, cat="Kernel"),
            memcpy("HtoD", 50, 7),
        ]
    )
    rows = {r["name"]: r for r in kernel_breakdown(store)}
    assert set(rows) == {"gemm", "gemm ", "relu"}
    assert rows["gemm"] == {
        "name": "gemm",
        "count": 2,
        "total_us": 40.0,
        "mean_us": 20.0,
        "min_us": 10.0,
        "max_us": 30.0,
    }
    assert [r["name"] for r in kernel_breakdown(store)] == ["gemm", "relu", "gemm "]


def test_kernel_kinds_classify_by_name_and_sum_overlaps_twice() -> None:
    store = store_of(
        [
            kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 0, 10),
            kernel("ncclDevKernel_Generic", 0, 5),  # RCCL spelling
            kernel("nccl_but_not_a_comm_kernel_name", 0, 1),
            kernel("gemm", 0, 4),
            kernel("gemm", 2, 4),  # overlapping: 8 µs, not 6
            memcpy("HtoD", 20, 3),
            memset(30, 2),
            kernel("dma_copy", 40, 1),
            kernel("Stream Sync", 50, 100, cat="cuda_sync"),
            kernel("annotation", 0, 100, cat="gpu_user_annotation"),
        ]
    )
    assert kernel_kinds(store) == {"compute_us": 9.0, "communication_us": 15.0, "memory_us": 6.0}


def test_launch_latency_is_gap_from_launch_end_to_gpu_start_clipped_at_zero() -> None:
    store = store_of(
        [
            runtime("cudaLaunchKernel", 0, 2, 1),
            kernel("a", 10, 1, 1),  # 8
            runtime("cudaMemcpyAsync", 20, 2, 2),
            memcpy("HtoD", 24, 1, 2),  # 2
            runtime("cudaMemcpy", 30, 50, 3),
            memcpy("DtoH", 40, 5, 3),  # synchronous: -40 -> 0
            runtime("cudaLaunchKernel", 90, 1, 4),
            kernel("b", 95.5, 1, 4),  # 4.5
        ]
    )
    lat = launch_latency(store)
    assert lat["count"] == 4
    assert lat["mean_us"] == pytest.approx((8 + 2 + 0 + 4.5) / 4)
    # linear interpolation: sorted [0, 2, 4.5, 8]; p50 h=1.5 -> 3.25; p95 h=2.85 -> 4.5+0.85*3.5
    assert lat["p50_us"] == pytest.approx(3.25)
    assert lat["p95_us"] == pytest.approx(4.5 + 0.85 * 3.5)
    assert lat["max_us"] == 8.0 and lat["min_us"] == 0.0
    assert lat["by_api"] == {"cudaLaunchKernel": 2, "cudaMemcpyAsync": 1, "cudaMemcpy": 1}


def test_every_kernel_of_one_graph_launch_counts() -> None:
    store = store_of(
        [runtime("cudaGraphLaunch", 0, 5, 7)] + [kernel(f"k{i}", 10 + i, 1, 7) for i in range(3)]
    )
    lat = launch_latency(store)
    assert lat["count"] == 3
    assert lat["mean_us"] == pytest.approx(6.0)


def test_driver_and_hip_launch_calls_count_and_unmatched_ops_are_ignored() -> None:
    store = store_of(
        [
            event("cuLaunchKernel", "cuda_driver", 0, 1, correlation=1),
            kernel("triton_poi", 3, 1, 1),
            runtime("hipExtModuleLaunchKernel", 10, 1, 2),
            kernel("rocm_k", 12, 1, 2),
            kernel("orphan", 20, 1, 99),
            kernel("no correlation", 30, 1),
        ]
    )
    lat = launch_latency(store)
    assert lat["count"] == 2
    assert lat["unmatched_gpu_ops"] == 2
    assert lat["by_api"] == {"cuLaunchKernel": 1, "hipExtModuleLaunchKernel": 1}


def test_no_gpu_ops_gives_empty_statistics() -> None:
    store = store_of([event("aten::add", "cpu_op", 0, 5)])
    lat = launch_latency(store)
    assert lat["count"] == 0 and lat["mean_us"] is None and lat["p95_us"] is None
    assert kernel_breakdown(store) == [] and temporal_breakdown(store) == []
    assert kernel_kinds(store) == {"compute_us": 0.0, "communication_us": 0.0, "memory_us": 0.0}


def test_temporal_breakdown_uses_unions_per_device() -> None:
    store = store_of(
        [
            kernel("gemm", 0, 10),
            kernel("gemm", 5, 10),  # compute union 0-15
            memcpy("HtoD", 12, 8),  # busy until 20, non-compute 15-20
            kernel("ncclKernel_x", 30, 10),  # communication: non-compute
            kernel("gemm", 100, 10, device=1),
        ]
    )
    rows = {r["device"]: r for r in temporal_breakdown(store)}
    d0 = rows[0]
    assert (d0["span_us"], d0["idle_us"], d0["compute_us"], d0["non_compute_us"]) == (40.0, 10.0, 15.0, 15.0)
    assert rows[1]["idle_us"] == 0.0 and rows[1]["compute_us"] == 10.0


def test_triton_cpu_op_with_stream_zero_is_not_gpu_work() -> None:
    # HTA treats any event with args.stream != -1 as GPU work: 94 µs of "compute" for a 1.76 µs kernel
    store = store_of(
        [
            event("triton_poi_fused_add_cos_sin_0", "cpu_op", 0, 94, stream=0),
            event("cuLaunchKernel", "cuda_driver", 40, 47.768, correlation=35),
            kernel("triton_poi_fused_add_cos_sin_0", 87.768, 1.76, 35, device=0, stream=7),
        ]
    )
    (row,) = temporal_breakdown(store)
    assert row["compute_us"] == pytest.approx(1.76) and row["span_us"] == pytest.approx(1.76)
    assert kernel_kinds(store)["compute_us"] == pytest.approx(1.76)
    assert launch_latency(store)["p50_us"] == 0.0


def test_cuda_sync_records_are_not_busy_time() -> None:
    store = store_of(
        [kernel("k", 0, 1), kernel("Stream Wait Event", 1, 50, cat="cuda_sync"), kernel("k", 60, 1)]
    )
    (row,) = temporal_breakdown(store)
    assert row["idle_us"] == 59.0 and row["compute_us"] == 2.0


def test_sub_microsecond_ops_keep_their_exact_duration() -> None:
    # HTA's ns rounding (ceil start, floor end) would make these 0 or negative
    store = store_of([memset(100.2, 0.6), memset(101.9, 0.3), kernel("k", 102.4, 0.9)])
    assert kernel_breakdown(store)[0]["total_us"] == pytest.approx(0.9)
    assert {m["kind"]: m["total_us"] for m in memory_ops(store)} == {"Memset": pytest.approx(0.9)}
    (row,) = temporal_breakdown(store)
    assert row["span_us"] == pytest.approx(3.1) and row["idle_us"] == pytest.approx(1.3)


def test_whole_trace_is_analysed_without_step_trimming() -> None:
    store = store_of(
        [
            annotation("ProfilerStep#1", 0, 10),
            annotation("ProfilerStep#2", 10, 10),
            runtime("cudaLaunchKernel", 1, 1, 1),
            kernel("in step", 3, 1, 1),
            runtime("cudaLaunchKernel", 25, 1, 2),
            kernel("after last step", 28, 1, 2),
            kernel("never launched", 40, 1),
        ]
    )
    assert {r["name"] for r in kernel_breakdown(store)} == {"in step", "after last step", "never launched"}
    assert launch_latency(store)["count"] == 2


def test_memory_ops_by_direction_with_bytes_and_bandwidth() -> None:
    store = store_of(
        [
            memcpy("HtoD", 0, 10, nbytes=1_000_000),
            memcpy("HtoD", 20, 10, nbytes=3_000_000),
            memcpy("DtoH", 40, 1),
            memset(50, 2, nbytes=64, cat="Memset"),
            kernel("Memcpy", 60, 1, cat="gpu_memcpy"),  # shorter than 11 characters
            kernel("cross-device copy", 70, 1, cat="gpu_memcpy"),  # not named Memcpy*: HTA's "Unknown"
        ]
    )
    rows = {r["kind"]: r for r in memory_ops(store)}
    assert set(rows) == {"Memcpy HtoD", "Memcpy DtoH", "Memset", "Memcpy", "Memcpy Unknown"}
    htod = rows["Memcpy HtoD"]
    assert (htod["count"], htod["total_us"], htod["bytes"]) == (2, 20.0, 4_000_000)
    assert htod["bandwidth_gbps"] == pytest.approx(200.0)  # 4 MB in 20 µs = 200 GB/s
    assert rows["Memcpy DtoH"]["bytes"] is None and rows["Memcpy DtoH"]["events_without_bytes"] == 1


def test_sync_ops_cover_cuda_and_hip_calls_and_gpu_side_records() -> None:
    store = store_of(
        [
            runtime("cudaDeviceSynchronize", 0, 10, 1),
            runtime("cudaStreamSynchronize", 20, 4, 2),
            runtime("cudaStreamSynchronize", 30, 6, 3),
            runtime("hipEventSynchronize", 40, 1, 4),
            runtime("cudaStreamWaitEvent", 50, 1, 5),
            runtime("cudaLaunchKernel", 60, 1, 6),
            kernel("Event Sync", 70, 3, cat="cuda_sync"),
        ]
    )
    rows = {(r["name"], r["side"]): r for r in sync_ops(store)}
    assert set(rows) == {
        ("cudaDeviceSynchronize", "cpu"),
        ("cudaStreamSynchronize", "cpu"),
        ("hipEventSynchronize", "cpu"),
        ("cudaStreamWaitEvent", "cpu"),
        ("Event Sync", "gpu"),
    }
    s = rows[("cudaStreamSynchronize", "cpu")]
    assert (s["count"], s["total_us"], s["mean_us"], s["max_us"]) == (2, 10.0, 5.0, 6.0)


def test_step_time_splits_into_kernel_memory_sync_and_cpu_only() -> None:
    store = store_of(
        [
            annotation("ProfilerStep#7", 0, 100),
            kernel("k", 10, 20),  # kernel 10-30
            memcpy("HtoD", 25, 15),  # memory only 30-40
            runtime("cudaDeviceSynchronize", 35, 15, 9),  # sync only 40-50
            kernel("outside", 150, 10),
        ]
    )
    (s,) = steps(store)
    assert s["step"] == 7 and s["duration_us"] == 100.0
    assert (s["kernel_us"], s["memory_us"], s["sync_us"], s["cpu_only_us"]) == (20.0, 10.0, 10.0, 60.0)


def test_step_annotations_named_step_n_are_used_when_there_is_no_profiler_step() -> None:
    store = store_of([annotation("step_2", 50, 10), annotation("step_1", 0, 40), annotation("stepper", 0, 1)])
    assert [(s["step"], s["duration_us"]) for s in steps(store)] == [(1, 40.0), (2, 10.0)]


def test_profiler_steps_win_over_step_n_annotations() -> None:
    store = store_of([annotation("ProfilerStep#3", 0, 10), annotation("step_9", 0, 5)])
    assert [s["name"] for s in steps(store)] == ["ProfilerStep#3"]


def test_utilization_buckets_report_busy_percentage() -> None:
    store = store_of([kernel("k", 0, 10), kernel("k", 30, 10)])
    (row,) = utilization(store, buckets=4)
    assert row["bucket_us"] == 10.0
    assert row["busy_pct"] == [100.0, 0.0, 0.0, 100.0]


def test_idle_time_splits_into_host_wait_kernel_wait_and_other() -> None:
    store = store_of(
        [
            runtime("cudaLaunchKernel", 0, 1, 1),
            kernel("a", 2, 10, 1),
            runtime("cudaLaunchKernel", 20, 1, 2),
            kernel("b", 22, 10, 2),  # launched after a ended: host wait 10
            runtime("cudaLaunchKernel", 23, 1, 3),
            kernel("c", 42, 5, 3),  # queued, gap 10 < 30: kernel wait
            runtime("cudaLaunchKernel", 24, 1, 4),
            kernel("d", 147, 5, 4),  # queued, gap 100: other
        ]
    )
    (row,) = idle_breakdown(store)
    assert (row["host_wait_us"], row["kernel_wait_us"], row["other_us"]) == (10.0, 10.0, 100.0)
    assert row["idle_us"] == 120.0


@pytest.mark.parametrize(
    ("name", "precision"),
    [
        ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", "fp16"),
        ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32", "bf16"),
        ("cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4", "tf32"),
        ("ampere_sgemm_128x64_nn", "fp32"),
        ("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n", "fp8"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>>", "fp16"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<int>, "
            "at::detail::Array<char*, 3> >",
            "unknown",
        ),
        ("imma_int8_gemm", "int8"),
        ("ncclKernel_AllReduce", "unknown"),
    ],
)
def test_kernel_precision_is_guessed_from_the_name(name: str, precision: str) -> None:
    assert kernel_precision(name) == precision


def test_precision_breakdown_leaves_out_communication_kernels() -> None:
    store = store_of(
        [kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", 0, 50), kernel("ampere_sgemm", 60, 5)]
    )
    assert [r["precision"] for r in precision_breakdown(store)] == ["fp32"]


def test_precision_breakdown_sums_time_per_precision() -> None:
    store = store_of(
        [kernel("ampere_sgemm_x", 0, 30), kernel("ampere_fp16_gemm", 40, 10), kernel("relu", 60, 10)]
    )
    rows = {r["precision"]: r for r in precision_breakdown(store)}
    assert rows["fp32"]["total_us"] == 30.0 and rows["fp32"]["pct"] == 60.0
    assert rows["fp16"]["count"] == 1 and rows["unknown"]["total_us"] == 10.0
