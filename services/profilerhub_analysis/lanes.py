"""Lanes: the CPU threads and GPU streams of a trace, in display order."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from profilerhub_analysis.events import Metadata
from profilerhub_analysis.store import Columns

LANE_CPU, LANE_GPU, LANE_OTHER = 0, 1, 2
LANE_KIND_NAMES = ("cpu_thread", "gpu_stream", "other")


def _label_number(label: str) -> int:
    """The last number in a label ("stream 7" -> 7, "0x1" -> 1), else -1."""
    try:
        return int(label, 0)
    except ValueError:
        digits = re.findall(r"\d+", label)
        return int(digits[-1]) if digits else -1


def _is_int_like(value: int | str) -> bool:
    return isinstance(value, int) or value.strip().lstrip("-").isdigit()


def as_int(value: int | str | None) -> int:
    if value is None:
        return -1
    return value if isinstance(value, int) else _label_number(value)


def build_lanes(
    raw_keys: list[tuple[bool, int | str, int | str]],
    raw_lane: np.ndarray,
    keep: np.ndarray,
    meta_events: list[Metadata],
    gpu_devices: dict[int, int] | None = None,
) -> tuple[Columns, np.ndarray, np.ndarray]:
    """Lanes from the distinct (is GPU work, pid, tid) keys, in display order.

    Returns the lanes table and, per raw key, its lane id and device (-1 for CPU lanes). GPU
    work stays on a GPU lane whatever its pid/tid spelling (2021 traces name streams "stream 7");
    CPU-side events with label pids/tids (Kineto's "Spans" row) go to an ``other`` lane.
    ``gpu_devices`` (TensorFlow traces: GPU plane pid -> device ordinal) names GPU lanes by their
    thread names ("GPU 0 Stream #14(Compute)", "GPU 0 XLA Ops") instead of Kineto's pid = device.
    """
    used = np.zeros(len(raw_keys), dtype=bool)
    used[raw_lane[keep]] = True

    proc_name: dict[int, str] = {}
    proc_sort: dict[int, int] = {}
    thread_name: dict[tuple[int, int], str] = {}
    thread_sort: dict[tuple[int, int], int] = {}
    for e in meta_events:  # one per process/thread, not per event
        if not isinstance(e.pid, int) or not isinstance(e.tid, int):
            continue
        a = e.args
        if e.name == "process_name" and a.name:
            proc_name[e.pid] = a.name
        elif e.name == "process_labels" and a.labels:
            proc_name.setdefault(e.pid, a.labels)
        elif e.name == "process_sort_index" and a.sort_index is not None:
            proc_sort[e.pid] = a.sort_index
        elif e.name == "thread_name" and a.name:
            thread_name[(e.pid, e.tid)] = a.name.strip()
        elif e.name == "thread_sort_index" and a.sort_index is not None:
            thread_sort[(e.pid, e.tid)] = a.sort_index

    rows: list[tuple[Any, ...]] = []
    devices = np.full(len(raw_keys), -1, dtype=np.int32)
    for i, (is_gpu, raw_pid, raw_tid) in enumerate(raw_keys):  # once per lane
        if not used[i]:
            continue
        # numeric strings ("12345", as some older traces write thread ids) are plain ids
        labelled = not _is_int_like(raw_pid) or not _is_int_like(raw_tid)
        p, t = as_int(raw_pid), as_int(raw_tid)
        if is_gpu:
            cls = LANE_GPU
            if gpu_devices is None:
                dev = p  # Kineto writes GPU work with pid = device ("GPU 1"-like labels: their number)
                label = f"GPU {dev} stream {t}"
            else:
                dev = gpu_devices.get(p, p)
                label = f"GPU {dev} {thread_name.get((p, t)) or f'line {t}'}"
            devices[i] = dev
        elif labelled:
            cls, dev = LANE_OTHER, -1
            label = f"{raw_pid} / {raw_tid}"
        else:
            cls, dev = LANE_CPU, -1
            label = thread_name.get((p, t)) or f"thread {t}"
            if p in proc_name:
                label = f"{proc_name[p]} ({p}) {label}"
        sort_key = (cls, proc_sort.get(p, p), p, thread_sort.get((p, t), t), t, str(raw_pid), str(raw_tid))
        rows.append((sort_key, i, LANE_KIND_NAMES[cls], p, t, dev, label))
    rows.sort(key=lambda r: r[0])
    lane_of_raw = np.full(len(raw_keys), -1, dtype=np.int64)
    for lane, row in enumerate(rows):
        lane_of_raw[row[1]] = lane
    lanes: Columns = {
        "kind": np.array([r[2] for r in rows], dtype=object),
        "pid": np.array([r[3] for r in rows], dtype=np.int64),
        "tid": np.array([r[4] for r in rows], dtype=np.int64),
        "device": np.array([r[5] for r in rows], dtype=np.int32),
        "name": np.array([r[6] for r in rows], dtype=object),
        "sort": np.arange(len(rows), dtype=np.int64),
    }
    return lanes, lane_of_raw, devices


__all__ = ["LANE_CPU", "LANE_GPU", "LANE_KIND_NAMES", "LANE_OTHER", "as_int", "build_lanes"]
