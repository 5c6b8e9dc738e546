"""All analyses of one trace as one JSON-ready dict (what ``profilerhub analyze`` prints)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from profilerhub_analysis.build import load_trace
from profilerhub_analysis.gpu_metrics import gpu_metrics
from profilerhub_analysis.kernels import kernel_breakdown, kernel_kinds
from profilerhub_analysis.launch import launch_latency, launch_stats
from profilerhub_analysis.memory import memory_bw, memory_ops
from profilerhub_analysis.precision import precision_breakdown
from profilerhub_analysis.reader import file_chunks
from profilerhub_analysis.steps import steps
from profilerhub_analysis.store import EventStore
from profilerhub_analysis.stream import SLICE_BYTES
from profilerhub_analysis.streams import idle_breakdown, queue_length
from profilerhub_analysis.sync import sync_ops
from profilerhub_analysis.tbviews import SECTIONS as TB_SECTIONS
from profilerhub_analysis.tbviews import tb_views
from profilerhub_analysis.tbviews.parse import parse_chunks
from profilerhub_analysis.temporal import comm_comp_overlap, temporal_breakdown
from profilerhub_analysis.utilization import DEFAULT_BUCKETS, utilization


def analyze_store(
    store: EventStore, top: int | None = None, buckets: int = DEFAULT_BUCKETS
) -> dict[str, Any]:
    """Every analysis of one trace. ``top`` keeps only the N kernels with the most time.

    Times are in µs of the trace's own time base.
    """
    kernels = kernel_breakdown(store)
    meta = store.meta
    report: dict[str, Any] = {
        "source": meta.source,
        "rank": meta.rank,
        "events": meta.events_total,
        "x_events": len(store),
        "skipped_events": meta.skipped,
        "devices": [p.get("name") for p in meta.device_properties if isinstance(p, dict)],
        "kernels": kernels[:top] if top is not None else kernels,
        "kernel_count": sum(k["count"] for k in kernels),
        "kernel_time_us": sum(k["total_us"] for k in kernels),
        "distinct_kernels": len(kernels),
        "kernel_kinds": kernel_kinds(store),
        "launch_latency": launch_latency(store),
        "temporal": temporal_breakdown(store),
        "idle_breakdown": idle_breakdown(store),
        "queue_length": queue_length(store),
        "comm_comp_overlap": comm_comp_overlap(store),
        "memory_ops": memory_ops(store),
        "memory_bw": memory_bw(store),
        "launch_stats": launch_stats(store),
        "gpu_metrics": gpu_metrics(store),
        "sync_ops": sync_ops(store),
        "steps": steps(store),
        "utilization": utilization(store, buckets),
        "precision": precision_breakdown(store),
    }
    return report


def analyze_file(path: str | Path, top: int | None = None, max_bytes: int | None = None) -> dict[str, Any]:
    """Every analysis of one trace file, the TensorBoard plugin's views (``tb_*``) included."""
    p = Path(path)
    store = load_trace(p, max_bytes)  # streamed: the document is not in memory beside the store
    report = analyze_store(store, top=top)
    kineto = store.meta.producer == "kineto"  # TensorFlow's traces have none of what the views read
    del store
    none = dict.fromkeys(TB_SECTIONS) | {
        "tb_notes": [],
        "tb_facts": None,
        "tb_distributed": None,
        "tb_memory_curve": [],
    }
    report.update(tb_views(parse_chunks(file_chunks(p, max_bytes, size=SLICE_BYTES))) if kineto else none)
    return report


__all__ = ["analyze_file", "analyze_store"]
