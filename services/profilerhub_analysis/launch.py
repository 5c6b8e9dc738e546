"""Kernel launch latency: how long after its CPU launch call returned a GPU op started."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.kernels import gpu_op_mask
from profilerhub_analysis.store import EventStore

#: Histogram bin edges in µs (the last bin is open-ended).
HISTOGRAM_EDGES_US = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10000)


def launch_latencies(store: EventStore) -> tuple[np.ndarray, np.ndarray]:
    """(latency in ns per joined GPU op, row of its launch event).

    Latency = max(0, op start - (launch start + launch duration)). Every GPU op whose correlation
    id matches a CPU-side event counts, so each kernel of one cudaGraphLaunch counts once.
    """
    launch = store.col("launch")
    rows = np.flatnonzero(gpu_op_mask(store.col("kind")) & (launch >= 0))
    ts = store.col("ts_ns")
    cpu = launch[rows]
    latency = np.maximum(ts[rows] - (ts[cpu] + store.col("dur_ns")[cpu]), 0)
    return latency, cpu


def percentile(values_us: np.ndarray, q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method)."""
    return float(np.percentile(values_us, q))


def launch_latency(store: EventStore) -> dict[str, Any]:
    """count, mean, p50, p95, min, max (µs), launches by API name and a histogram."""
    latency_ns, cpu = launch_latencies(store)
    out = summarize_latencies(latency_ns)
    out["unmatched_gpu_ops"] = int(gpu_op_mask(store.col("kind")).sum()) - int(len(latency_ns))
    if len(latency_ns):
        api_ids, api_counts = np.unique(store.col("name_id")[cpu], return_counts=True)
        names = store.name_list
        pairs = sorted(zip(api_ids.tolist(), api_counts.tolist(), strict=True), key=lambda p: -p[1])
        out["by_api"] = {names[i]: int(c) for i, c in pairs}
    return out


#: HTA ``get_cuda_kernel_launch_stats`` cutoffs (its defaults), in ns.
RUNTIME_CUTOFF_NS = 50_000
LAUNCH_DELAY_CUTOFF_NS = 100_000


def launch_stats(store: EventStore) -> list[dict[str, Any]]:
    """Per device with launch pairs (GPU op + its CPU launch call, memcpy/memset included):

    - ``short_gpu_ops``: the launch took at most 50 µs and the GPU op ran shorter than it
      (HTA's "GPU kernels shorter than their launch": launch overhead dominates);
    - ``runtime_outliers``: launch calls over 50 µs;
    - ``launch_delay_outliers``: the op started more than 100 µs after its launch returned.
    """
    launch = store.col("launch")
    rows = np.flatnonzero(gpu_op_mask(store.col("kind")) & (launch >= 0))
    if not len(rows):
        return []
    ts, dur = store.col("ts_ns"), store.col("dur_ns")
    cpu = launch[rows]
    cpu_dur, gpu_dur = dur[cpu], dur[rows]
    delay = np.maximum(ts[rows] - (ts[cpu] + cpu_dur), 0)
    device = store.col("device")[rows]
    out = []
    for dev in np.unique(device).tolist():  # once per GPU
        d = device == dev
        short = d & (cpu_dur <= RUNTIME_CUTOFF_NS) & (gpu_dur < cpu_dur)
        out.append(
            {
                "device": int(dev),
                "launches": int(d.sum()),
                "short_gpu_ops": int(short.sum()),
                "runtime_outliers": int((d & (cpu_dur > RUNTIME_CUTOFF_NS)).sum()),
                "launch_delay_outliers": int((d & (delay > LAUNCH_DELAY_CUTOFF_NS)).sum()),
            }
        )
    return out


def summarize_latencies(latency_ns: np.ndarray) -> dict[str, Any]:
    """Statistics of latencies given in ns, reported in µs (all None when there are none)."""
    out: dict[str, Any] = {
        "count": int(len(latency_ns)),
        "mean_us": None,
        "p50_us": None,
        "p95_us": None,
        "max_us": None,
        "min_us": None,
        "by_api": {},
        "histogram": None,
    }
    if not len(latency_ns):
        return out
    us = latency_ns / 1000.0
    out.update(
        mean_us=float(us.mean()),
        p50_us=percentile(us, 50),
        p95_us=percentile(us, 95),
        max_us=float(us.max()),
        min_us=float(us.min()),
    )
    edges = np.array(HISTOGRAM_EDGES_US, dtype=np.float64)
    counts = np.bincount(np.searchsorted(edges, us, side="right") - 1, minlength=len(edges))
    # counts[i] = ops with edges[i] <= latency < edges[i + 1]; the last bin has no upper edge
    out["histogram"] = {"edges_us": list(HISTOGRAM_EDGES_US), "counts": counts.tolist()}
    return out


__all__ = [
    "HISTOGRAM_EDGES_US",
    "LAUNCH_DELAY_CUTOFF_NS",
    "RUNTIME_CUTOFF_NS",
    "launch_latencies",
    "launch_latency",
    "launch_stats",
    "percentile",
    "summarize_latencies",
]
