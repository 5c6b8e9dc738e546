"""Everything the profiler app's timeline asks of one trace, built once at ingest.

``TraceTimeline.build(store)`` gathers

- the ``TimelineIndex`` over the trace's events and counters, plus utilisation tracks as counters:
  per GPU a 0/100 step function of "any GPU op running" and per host process 100 x the share of
  its threads inside an event, so a window's per-column mean is that column's utilisation at any
  zoom;
- per event (by event id = store row) the columns the event panel shows, and the reverse launch
  link (GPU ops by the row of their launch call);
- the lane tree (``lanes``, JSON): hosts with their threads (each followed by its lane of the
  SDK's annotations and steps, when the job has them), GPUs with their streams, counters.

``to_files()`` writes it as ``.npy`` arrays + JSON (see ``persist``), plus the overview: the window
answer for the whole trace at ``OVERVIEW_PX`` columns, so a reader that has not fetched the arrays
yet (the app on S3) can draw the first view; ``TraceTimeline.open(dir)`` maps them back read-only
without rebuilding anything. Queries: ``window_bytes`` (the binary window
of ``docs/app-api.md``), ``event``, ``search``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .binary import encode_window
from .index import TimelineIndex
from .persist import iter_index_files, npy_bytes, open_index
from .sdk_lanes import LANE_KIND, with_sdk_lanes

if TYPE_CHECKING:
    from ..sdk_records import AnnotationRecord
    from ..store import EventStore

BUNDLE_FORMAT = "profilerhub-timeline/1"
#: Per-event columns kept for the event panel (store columns, by event id).
DETAIL_COLUMNS = (
    "ts_ns", "dur_ns", "name_id", "kind", "lane_id", "correlation", "bytes", "stream", "device",
    "launch", "bandwidth", "blocks_per_sm", "occupancy",
)  # fmt: skip
KIND_NAMES = (
    "other", "cpu_op", "user_annotation", "gpu_user_annotation", "cuda_runtime", "cuda_driver",
    "kernel", "gpu_memcpy", "gpu_memset", "python_function", "cuda_sync", "trace",
    "sdk_annotation", "sdk_step",
)  # fmt: skip
MAX_SEARCH = 1000
LANES_FILE = "lanes.json"
INDEX_PREFIX = "index."  # the files window queries need (with LANES_FILE)
OVERVIEW_FILE = "overview.phw"
#: Columns of the overview: what the page asks for a first view 2048 px wide (twice its width).
OVERVIEW_PX = 4096
_ARG_NAMES = {
    "correlation": "correlation",
    "bytes": "bytes",
    "stream": "stream",
    "device": "device",
    "bandwidth": "memory bandwidth (GB/s)",
    "blocks_per_sm": "blocks per SM",
    "occupancy": "est. achieved occupancy %",
}
_GPU_OPS = (6, 7, 8)  # Kind.KERNEL, MEMCPY, MEMSET (the store's codes)


def _union(start: npt.NDArray[np.int64], end: npt.NDArray[np.int64]) -> tuple[np.ndarray, np.ndarray]:
    from ..intervals import union

    return union(start, end)


def _busy_steps(
    starts: list[np.ndarray], ends: list[np.ndarray], scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """A step function (ts, value) of ``scale`` x the number of the interval sets busy at a time;
    each set is first merged into disjoint intervals."""
    ts_parts, delta_parts = [], []
    for s, e in zip(starts, ends, strict=True):
        us, ue = _union(s, e)
        ts_parts += [us, ue]
        delta_parts += [np.ones(len(us)), -np.ones(len(ue))]
    if not ts_parts:
        return np.zeros(0, np.int64), np.zeros(0)
    ts = np.concatenate(ts_parts)
    delta = np.concatenate(delta_parts)
    order = np.lexsort((delta, ts))  # ends (-1) before starts at equal times
    ts, level = ts[order], np.cumsum(delta[order])
    last = np.append(ts[1:] != ts[:-1], True)  # one sample per time: the level after all changes
    return ts[last], level[last] * scale


def _util_counters(
    store: EventStore,
) -> tuple[list[str], list[np.ndarray], list[np.ndarray], list[dict[str, Any]]]:
    ts, dur = store.col("ts_ns"), store.col("dur_ns")
    end = ts + dur
    lane_id, kind = store.col("lane_id"), store.col("kind")
    lane_kind = store.lane_column("kind")
    names: list[str] = []
    tss: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    tracks: list[dict[str, Any]] = []
    gpu = np.isin(kind, np.array(_GPU_OPS, np.int8))
    device = store.col("device")
    for dev in np.unique(device[gpu]).tolist():  # once per GPU
        d = gpu & (device == dev)
        t, v = _busy_steps([ts[d]], [end[d]], 100.0)
        names.append(f"GPU {dev} utilization (%)")
        tss.append(t)
        vals.append(v)
        tracks.append({"kind": "gpu_util", "device": int(dev)})
    cpu_lanes = np.flatnonzero(np.array([k == "cpu_thread" for k in lane_kind] or [False], dtype=bool))
    pids = store.lane_column("pid")
    order = np.argsort(lane_id, kind="stable")  # rows are sorted by lane already; cheap
    bounds = np.searchsorted(lane_id[order], np.arange(len(lane_kind) + 1))
    for pid in np.unique(pids[cpu_lanes]).tolist() if len(cpu_lanes) else []:  # once per process
        lanes = cpu_lanes[pids[cpu_lanes] == pid]
        rows = [order[bounds[ln] : bounds[ln + 1]] for ln in lanes.tolist()]
        t, v = _busy_steps([ts[r] for r in rows], [end[r] for r in rows], 100.0 / len(lanes))
        names.append(f"CPU {pid} utilization (%)")
        tss.append(t)
        vals.append(v)
        tracks.append({"kind": "cpu_util", "pid": int(pid)})
    return names, tss, vals, tracks


class TraceTimeline:
    """One trace's timeline data; see the module docstring."""

    index: TimelineIndex
    columns: dict[str, np.ndarray]
    launched_by: np.ndarray  # launch rows of GPU ops, sorted
    launched_op: np.ndarray  # the GPU op rows, in that order
    lanes: dict[str, Any]

    @classmethod
    def build(
        cls, store: EventStore, source: str = "", annotations: Sequence[AnnotationRecord] = ()
    ) -> TraceTimeline:
        """Everything above from ``store``; ``annotations``: the SDK's records of the job, drawn
        on lanes of their own (``sdk_lanes``), their event ids after the store's rows."""
        self = cls.__new__(cls)
        store, sdk_step_rows, sdk_step_numbers = with_sdk_lanes(store, annotations)
        util_names, util_ts, util_vals, util_tracks = _util_counters(store)
        self.index = TimelineIndex.from_store(store, list(zip(util_names, util_ts, util_vals, strict=True)))
        first_util = len(self.index.counter_names or []) - len(util_names)
        counter_tracks: list[dict[str, Any]] = [{"kind": "counter"} for _ in range(first_util)]
        self.columns = {name: store.col(name) for name in DETAIL_COLUMNS}
        launch = store.col("launch")
        ops = np.flatnonzero(launch >= 0)
        order = np.argsort(launch[ops], kind="stable")
        self.launched_by, self.launched_op = launch[ops][order], ops[order]
        self.lanes = self._lane_tree(
            store, source, counter_tracks + util_tracks, first_util, (sdk_step_rows, sdk_step_numbers)
        )
        return self

    def _lane_tree(
        self,
        store: EventStore,
        source: str,
        tracks: list[dict[str, Any]],
        first_util: int,
        sdk_steps: tuple[np.ndarray, np.ndarray],
    ) -> dict[str, Any]:
        index = self.index
        counts = np.bincount(store.col("lane_id"), minlength=len(store.lane_column("kind")))
        util_of = {
            (t["kind"], t.get("device", t.get("pid"))): i for i, t in enumerate(tracks) if i >= first_util
        }
        groups: list[dict[str, Any]] = []
        by_key: dict[tuple[str, int], dict[str, Any]] = {}
        head: dict[str, Any]
        for ln in range(len(store.lane_column("kind"))):  # once per lane (display order)
            kind = str(store.lane_column("kind")[ln])
            pid, tid = int(store.lane_column("pid")[ln]), int(store.lane_column("tid")[ln])
            device = int(store.lane_column("device")[ln])
            if kind == "gpu_stream":
                key = ("gpu", device)
                head = {"kind": "gpu", "device": device, "name": f"GPU {device}",
                        "util_counter": util_of.get(("gpu_util", device))}  # fmt: skip
            elif kind == "cpu_thread" or (kind == LANE_KIND and pid >= 0):
                key = ("host", pid)
                head = {"kind": "host", "pid": pid, "name": f"Host process {pid}",
                        "util_counter": util_of.get(("cpu_util", pid))}  # fmt: skip
            else:
                key = ("other", 0)
                head = {"kind": "other", "name": "Other", "util_counter": None}
            group = by_key.get(key)
            if group is None:
                group = by_key[key] = head | {"lanes": []}
                groups.append(group)
            lanes: list[dict[str, Any]] = group["lanes"]
            lane = {
                "lane_id": ln,
                "kind": kind,
                "tid": tid,
                "name": str(store.lane_column("name")[ln]),
                "rows": index.lane_depth(ln),
                "events": int(counts[ln]),
            }
            # A thread's SDK lane goes right below that thread's lane.
            at = [i for i, other in enumerate(lanes) if kind == LANE_KIND and other["tid"] == tid]
            lanes.insert(at[-1] + 1 if at else len(lanes), lane)
        names = index.counter_names or []
        counters = [{"counter_id": i, "name": n} | tracks[i] for i, n in enumerate(names)]
        from ..steps import step_rows

        rows, numbers = step_rows(store)
        if not len(rows):  # no ProfilerStep in the trace: the SDK's ph.step records, if any
            rows, numbers = sdk_steps
        ts, dur = store.col("ts_ns"), store.col("dur_ns")
        steps = [
            {"step": int(n), "start": int(ts[r]) - index.t_min, "end": int(ts[r] + dur[r]) - index.t_min}
            for r, n in zip(rows.tolist(), numbers.tolist(), strict=True)
        ]
        return {
            "format": BUNDLE_FORMAT,
            "source": source,
            "origin_ns": str(index.t_min + (store.meta.base_time_ns or 0)),
            "trace_origin_ns": index.t_min,
            "t_min": 0,
            "t_end": index.t_end - index.t_min,
            "events": len(index),
            "groups": groups,
            "counters": counters,
            "steps": steps,
            "kinds": {str(i): k for i, k in enumerate(KIND_NAMES)},
        }

    # -- files -------------------------------------------------------------------------------

    def to_files(self) -> dict[str, bytes]:
        """``{file name: bytes}``: the index, the detail columns, the launch links, ``lanes.json``."""
        return dict(self.iter_files())

    def iter_files(self) -> Iterator[tuple[str, bytes]]:
        """``to_files()`` one file at a time, so a writer holds one detail column's bytes, not all."""
        yield from iter_index_files(self.index, prefix=INDEX_PREFIX)
        for name, col in self.columns.items():
            yield f"event.{name}.npy", npy_bytes(col)
        yield "launched_by.npy", npy_bytes(self.launched_by)
        yield "launched_op.npy", npy_bytes(self.launched_op)
        yield LANES_FILE, json.dumps(self.lanes).encode()
        yield OVERVIEW_FILE, self.window_bytes(0, max(int(self.lanes["t_end"]), 1), OVERVIEW_PX)

    @classmethod
    def open(cls, directory: str | Path, details: bool = True) -> TraceTimeline:
        """Map a saved timeline read-only (nothing is rebuilt). ``details=False``: the index and
        lanes only (``INDEX_PREFIX`` files and ``lanes.json``), for windows alone: ``event``,
        ``search`` and ``aggregate`` need the per-event columns."""
        root = Path(directory)
        self = cls.__new__(cls)
        self.index = open_index(root, prefix=INDEX_PREFIX)
        self.columns, self.launched_by, self.launched_op = {}, np.zeros(0, np.int64), np.zeros(0, np.int64)
        if details:
            self.columns = {n: np.load(root / f"event.{n}.npy", mmap_mode="r") for n in DETAIL_COLUMNS}
            self.launched_by = np.load(root / "launched_by.npy", mmap_mode="r")
            self.launched_op = np.load(root / "launched_op.npy", mmap_mode="r")
        self.lanes = json.loads((root / LANES_FILE).read_text())
        return self

    # -- queries -----------------------------------------------------------------------------

    @property
    def origin(self) -> int:
        return int(self.index.t_min)

    def window_bytes(
        self,
        start: int,
        end: int,
        px: int,
        lanes: Sequence[int] | None = None,
        counters: Sequence[int] | None = None,
        min_px: float = 1.0,
    ) -> bytes:
        """The binary window answer (``docs/app-api.md``) for ``[start, end)`` ns from the origin."""
        window = self.index.window(
            self.origin + int(start),
            self.origin + int(end),
            px,
            lanes=lanes,
            min_px=min_px,
            counters=counters,
        )
        return encode_window(window)

    def _brief(self, row: int) -> dict[str, Any]:
        c = self.columns
        return {
            "id": row,
            "name": self.index.names[int(c["name_id"][row])],
            "kind": KIND_NAMES[int(c["kind"][row])]
            if 0 <= int(c["kind"][row]) < len(KIND_NAMES)
            else "other",
            "lane_id": int(c["lane_id"][row]),
            "start": int(c["ts_ns"][row]) - self.origin,
            "dur": int(c["dur_ns"][row]),
        }

    def event(self, event_id: int) -> dict[str, Any] | None:
        """One event's fields, args and launch links; None for an unknown id."""
        n = len(self.columns["ts_ns"])
        if not 0 <= event_id < n:
            return None
        c = self.columns
        out = self._brief(event_id)
        out["depth"] = int(self.index.depth[event_id])
        out["ts_us"] = int(c["ts_ns"][event_id]) / 1000.0
        args: dict[str, Any] = {}
        for col, label in _ARG_NAMES.items():
            v = c[col][event_id]
            value: Any = float(v) if np.issubdtype(v.dtype, np.floating) else int(v)
            if value == -1:
                continue
            args[label] = value
        out["args"] = args
        launch = int(c["launch"][event_id])
        out["launch"] = None
        if launch >= 0:
            out["launch"] = self._brief(launch) | {
                "latency_ns": max(
                    0, int(c["ts_ns"][event_id]) - int(c["ts_ns"][launch]) - int(c["dur_ns"][launch])
                )
            }
        lo, hi = np.searchsorted(self.launched_by, [event_id, event_id + 1])
        out["launched"] = [self._brief(int(r)) for r in self.launched_op[lo : min(hi, lo + 100)].tolist()]
        return out

    def search(self, q: str, limit: int = 100, after: int | None = None) -> dict[str, Any]:
        """Events whose name contains ``q`` (case-insensitive), by start time (ties: lane, id)."""
        needle = q.lower()
        names = self.index.names
        hit = np.array([needle in n.lower() for n in names] or [False], dtype=bool)  # once per name
        rows = np.flatnonzero(hit[self.columns["name_id"]])
        ts = self.columns["ts_ns"][rows] - self.origin
        order = np.lexsort((rows, self.columns["lane_id"][rows], ts))
        rows, ts = rows[order], ts[order]
        skip = int(np.searchsorted(ts, after, side="left")) if after is not None else 0
        limit = max(1, min(int(limit), MAX_SEARCH))
        shown = rows[skip : skip + limit]
        return {
            "q": q,
            "total": int(len(rows)),
            "first": skip,
            "matches": [self._brief(int(r)) for r in shown.tolist()],
            "more": skip + limit < len(rows),
        }

    def aggregate(
        self, start: int, end: int, lanes: Sequence[int] | None = None, limit: int = 15
    ) -> dict[str, Any]:
        """The events inside ``[start, end)`` ns from the origin (a box selection), by name: how
        many overlap it and their time clipped to it (inclusive: a parent and its children each
        count), largest first; ``lanes`` keeps only those lanes."""
        c = self.columns
        lo, hi = self.origin + int(start), self.origin + int(end)
        ts, dur = c["ts_ns"], c["dur_ns"]
        inside = (ts < hi) & (ts + dur > lo)
        if lanes is not None:
            inside &= np.isin(c["lane_id"], np.asarray(list(lanes), dtype=np.int64))
        rows = np.flatnonzero(inside)
        names = c["name_id"][rows]
        clipped = (np.minimum(ts[rows] + dur[rows], hi) - np.maximum(ts[rows], lo)).astype(np.float64)
        n = len(self.index.names)
        counts = np.bincount(names, minlength=n)
        totals = np.bincount(names, weights=clipped, minlength=n)
        top = np.lexsort((-counts, -totals))[: max(1, min(int(limit), MAX_SEARCH))]
        return {
            "start": int(start),
            "end": int(end),
            "events": int(len(rows)),
            "ops": [
                {"name": self.index.names[int(i)], "count": int(counts[i]), "total_ns": int(totals[i])}
                for i in top.tolist()
                if counts[i] > 0
            ],
        }


__all__ = [
    "BUNDLE_FORMAT",
    "DETAIL_COLUMNS",
    "INDEX_PREFIX",
    "KIND_NAMES",
    "LANES_FILE",
    "OVERVIEW_FILE",
    "OVERVIEW_PX",
    "TraceTimeline",
]
