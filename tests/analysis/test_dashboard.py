"""Dashboard panels are the engine's numbers: the report's where it has them, the store's otherwise."""

from __future__ import annotations

import pytest

from profilerhub_analysis.dashboard import dashboard, top_kernels, trace_panels
from profilerhub_analysis.report import analyze_store

from .tracegen import annotation, event, kernel, memcpy, store_of


def _store():  # type: ignore[no-untyped-def]
    return store_of(
        [
            event("ProfilerStep#1", "cpu_op", 0, 100),
            event("aten::mm", "cpu_op", 10, 40),
            annotation("forward", 10, 30),
            annotation("forward", 60, 10),
            kernel("gemm", 20, 30, stream=7),
            kernel("gemm", 60, 10, stream=7),
            kernel("relu", 80, 5, stream=8),
            memcpy("HtoD", 0, 10, stream=9, nbytes=100),
        ]
    )


def test_every_documented_panel_is_present_and_kernel_panels_come_from_the_report() -> None:
    store = _store()
    report = analyze_store(store)
    panels = dashboard(report, trace_panels(store, report), top=1)
    for name in ("gpu_active", "cpu_active", "gpu_utilization", "cpu_utilization", "kernel_time",
                 "kernel_time_top15", "launch_counts", "launch_counts_top15", "step_time", "precision",
                 "gpu_activity", "memory_ops", "memory_bw", "annotations", "launch_latency", "launch_stats",
                 "idle_breakdown", "temporal", "steps", "queue_length", "comm_comp_overlap", "gpu_metrics",
                 "cpu_ops", "metrics", "system"):  # fmt: skip
        assert name in panels, name
    kt = panels["kernel_time"]
    assert [r["name"] for r in kt["top"]] == ["gemm"] and kt["top"][0]["total_us"] == 40.0
    assert kt["other"] == {"kernels": 1, "count": 1, "total_us": 5.0, "pct": pytest.approx(100 * 5 / 45)}
    assert panels["launch_counts"]["top"][0] == {"name": "gemm", "count": 2, "pct": pytest.approx(200 / 3)}


def test_gpu_and_cpu_active_time_are_unions() -> None:
    store = _store()
    panels = trace_panels(store, analyze_store(store))
    # GPU ops: [0,10) [20,50) [60,70) [80,85): 55 µs of an 85 µs span
    assert panels["gpu_active"]["active_us"] == 55.0 and panels["gpu_active"]["span_us"] == 85.0
    assert panels["cpu_active"]["active_us"] == 100.0
    activity = {r["activity"]: r for r in panels["gpu_activity"]}
    assert activity["kernel"]["total_us"] == 45.0 and activity["memcpy"]["count"] == 1


def test_annotation_histograms_cover_every_range_of_the_name() -> None:
    store = _store()
    panels = trace_panels(store, analyze_store(store))
    names = {a["name"]: a for a in panels["annotations"]["names"]}
    assert names["forward"]["count"] == 2 and names["forward"]["total_us"] == 40.0
    assert sum(panels["annotations"]["histograms"]["forward"]["counts"]) == 2


def test_top_k_bounds_are_checked() -> None:
    store = _store()
    report = analyze_store(store)
    with pytest.raises(ValueError):
        dashboard(report, trace_panels(store, report), top=0)
    assert top_kernels([], 3)["top"] == []
