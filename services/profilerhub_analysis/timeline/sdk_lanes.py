"""The SDK's own records on the timeline: ``ph.annotate`` ranges and ``ph.step`` steps, one lane
per thread beside that thread's trace lane.

The SDK writes them with Unix-epoch ns timestamps (``docs/sdk.md``); a trace's events are ns from
its ``baseTimeNanoseconds`` (``TraceMeta.base_time_ns``; traces without one count from the epoch),
so a record lands at ``start_ns - base_time_ns``. Which records go on a trace's timeline:

- those of the threads the trace also has (by native thread id, which both record), when any
  thread matches: a multi-rank job's trace gets its own process's records only;
- all of them when none matches (one process, a trace without thread ids in common);

and of those, the ones overlapping the trace's time range, clipped to it (the SDK records the whole
run; a trace holds a few steps of it, and the timeline spans the trace).

``with_sdk_lanes(store, records)`` returns the store with those records appended as events (kind
``SDK_ANNOTATION`` / ``SDK_STEP``) on lanes of kind ``sdk_thread`` (one per thread, its ``pid``
that of the matching trace thread, else the trace's first process), plus the step numbers of the
step rows, so the lane tree can mark steps when the trace has no ``ProfilerStep``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..store import COUNTER_COLUMNS, EVENT_COLUMNS, EventStore

if TYPE_CHECKING:
    from ..sdk_records import AnnotationRecord

#: Event kind codes of the SDK's records (after the store's ``Kind`` codes 0-11).
SDK_ANNOTATION = 12
SDK_STEP = 13
LANE_KIND = "sdk_thread"


def with_sdk_lanes(
    store: EventStore, records: Sequence[AnnotationRecord]
) -> tuple[EventStore, np.ndarray, np.ndarray]:
    """``(store with the SDK lanes, rows of the SDK steps, their step numbers)``; the store itself
    and empty arrays when no record belongs on this trace's timeline."""
    none = np.zeros(0, dtype=np.int64)
    if not records or not len(store):
        return store, none, none
    base = store.meta.base_time_ns or 0
    start = np.fromiter((r.start_ns for r in records), np.int64, len(records)) - base
    end = np.maximum(np.fromiter((r.end_ns for r in records), np.int64, len(records)) - base, start)
    thread = np.fromiter((-1 if r.thread is None else r.thread for r in records), np.int64, len(records))
    ts, dur = store.col("ts_ns"), store.col("dur_ns")
    lo, hi = int(ts.min()), int((ts + dur).max())
    lane_kind, lane_tid = store.lane_column("kind"), store.lane_column("tid")
    cpu = np.array([k == "cpu_thread" for k in lane_kind], dtype=bool)
    keep = (start < hi) & (end > lo)
    shared = np.isin(thread, lane_tid[cpu])
    if shared.any():
        keep &= shared
    rows = np.flatnonzero(keep)
    if not len(rows):
        return store, none, none
    start, end = np.clip(start[rows], lo, hi), np.clip(end[rows], lo, hi)
    threads, lane_of = np.unique(thread[rows], return_inverse=True)  # one new lane per thread
    first_lane = len(lane_kind)
    lane_id = first_lane + lane_of
    is_step = np.array([records[i].kind == "step" for i in rows.tolist()], dtype=bool)
    names = list(store.name_list)
    name_ids = {n: i for i, n in enumerate(names)}
    name_id = np.empty(len(rows), dtype=np.int32)
    for k, i in enumerate(rows.tolist()):  # once per record; SDK records are thousands, not millions
        name = records[i].name
        if name not in name_ids:
            name_ids[name] = len(names)
            names.append(name)
        name_id[k] = name_ids[name]
    # The store's order: by lane, then start (parents before children that start with them).
    order = np.lexsort((-(end - start), start, lane_id))
    new = {
        "ts_ns": start[order], "dur_ns": (end - start)[order], "name_id": name_id[order],
        "kind": np.where(is_step, SDK_STEP, SDK_ANNOTATION).astype(np.int8)[order],
        "lane_id": lane_id[order].astype(np.int32),
    }  # fmt: skip
    columns = {}
    for name, _, _ in EVENT_COLUMNS:  # the other columns: "absent" (-1) for the SDK's records
        old = store.col(name)
        add = new.get(name)
        columns[name] = np.concatenate([old, np.full(len(rows), -1, old.dtype) if add is None else add])
    lanes = _lanes(
        store,
        threads,
        {int(r.thread): r.thread_name for r in records if r.thread is not None and r.thread_name},
    )
    counters = {name: store.counter_column(name) for name, _, _ in COUNTER_COLUMNS}
    out = EventStore(columns, names, lanes, counters, store.meta)
    steps = np.flatnonzero(is_step[order])
    numbers = np.array(
        [-1 if records[i].step is None else records[i].step for i in rows[order][steps].tolist()]
    )
    known = numbers >= 0
    return out, len(store) + steps[known], numbers[known].astype(np.int64)


def _lanes(
    store: EventStore, threads: np.ndarray, thread_names: dict[int, str | None]
) -> dict[str, np.ndarray]:
    """The store's lanes plus one ``sdk_thread`` lane per thread (in the process of the trace
    thread with that id, else the trace's first process)."""
    kind, pid, tid = store.lane_column("kind"), store.lane_column("pid"), store.lane_column("tid")
    cpu = np.flatnonzero(np.array([k == "cpu_thread" for k in kind], dtype=bool))
    fallback = int(pid[cpu[0]]) if len(cpu) else -1
    new_pid, new_name = [], []
    for t in threads.tolist():  # once per thread
        same = cpu[tid[cpu] == t]
        new_pid.append(int(pid[same[0]]) if len(same) else fallback)
        label = thread_names.get(t) or (f"thread {t}" if t >= 0 else "SDK")
        new_name.append(f"{label} · SDK annotations")
    m = len(threads)
    sort = store.lane_column("sort")
    return {
        "kind": np.concatenate([kind, np.array([LANE_KIND] * m, dtype=object)]),
        "pid": np.concatenate([pid, np.array(new_pid, dtype=np.int64)]),
        "tid": np.concatenate([tid, threads.astype(np.int64)]),
        "device": np.concatenate([store.lane_column("device"), np.full(m, -1, dtype=np.int32)]),
        "name": np.concatenate([store.lane_column("name"), np.array(new_name, dtype=object)]),
        "sort": np.concatenate(
            [sort, (int(sort.max()) + 1 if len(sort) else 0) + np.arange(m, dtype=np.int64)]
        ),
    }


__all__ = ["LANE_KIND", "SDK_ANNOTATION", "SDK_STEP", "with_sdk_lanes"]
