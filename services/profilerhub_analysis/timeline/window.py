"""What one timeline window query returns, and its JSON form for the browser."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from .counters import CounterTrack

IntArray = npt.NDArray[np.int64]


class _Columns:
    """Parallel arrays, one element per item (base of the dataclasses below)."""

    start: IntArray

    def take(self, which: npt.NDArray[np.bool_] | IntArray) -> Self:
        """The items selected by a mask or an index array."""
        cols = {f.name: getattr(self, f.name)[which] for f in fields(self)}  # type: ignore[arg-type]
        return type(self)(**cols)

    def __len__(self) -> int:
        return len(self.start)

    @classmethod
    def empty(cls) -> Self:
        return cls(**{f.name: np.zeros(0, dtype=np.int64) for f in fields(cls)})  # type: ignore[arg-type]


@dataclass(frozen=True)
class Events(_Columns):
    """Events at least ``min_px`` pixels wide, as they are (not clipped to the window)."""

    start: IntArray  # ns
    dur: IntArray  # ns
    depth: IntArray  # row in the lane's flame chart, 0 = top
    name_id: IntArray
    kind: IntArray  # the event's kind code, -1 when the index was built without kinds
    event_id: IntArray  # row of the event in the arrays the index was built from


@dataclass(frozen=True)
class Blocks(_Columns):
    """Narrower events of one row merged while no gap of a pixel separates them, clipped to the
    window (a long event or a gap of a pixel or more ends a block).

    ``name_id``/``kind``/``event_id`` are those of the block's longest event (first on ties), the
    event a user hovering the block most likely sees.
    """

    start: IntArray  # ns, start of the first event (or the window start)
    end: IntArray  # ns, end of the last event (or the window end)
    depth: IntArray
    count: IntArray  # events merged
    busy_ns: IntArray  # their summed duration inside the window
    name_id: IntArray
    kind: IntArray
    event_id: IntArray


@dataclass(frozen=True)
class LaneWindow:
    """One lane of a window. ``truncated``: rows from ``depth_shown`` down were left out to keep
    the answer under the item cap; zoom in to see them."""

    lane_id: int
    events: Events
    blocks: Blocks
    depth_shown: int
    truncated: bool

    @property
    def items(self) -> int:
        return len(self.events) + len(self.blocks)


@dataclass(frozen=True)
class Window:
    """The answer to ``TimelineIndex.window``: per lane events and blocks, per counter columns."""

    t0_ns: int
    t1_ns: int
    width_px: int
    min_px: float
    lanes: list[LaneWindow]
    counters: list[CounterTrack]
    names: Sequence[str]
    counter_names: Sequence[str] | None
    origin_ns: int

    @property
    def ns_per_px(self) -> float:
        return (self.t1_ns - self.t0_ns) / self.width_px

    def lane(self, lane_id: int) -> LaneWindow:
        for lane in self.lanes:
            if lane.lane_id == lane_id:
                return lane
        raise KeyError(lane_id)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: columnar lists, times in integer ns relative to ``origin_ns``.

        Relative times stay exact in a browser (JavaScript numbers hold integers up to 2**53; an
        epoch in ns does not fit). Names are given once, as ``{name_id: name}`` for the ids used.
        """
        origin = self.origin_ns
        used: list[IntArray] = []
        lanes = []
        for lane in self.lanes:
            ev, bl = lane.events, lane.blocks
            used += [ev.name_id, bl.name_id]
            lanes.append(
                {
                    "lane_id": lane.lane_id,
                    "depth_shown": lane.depth_shown,
                    "truncated": lane.truncated,
                    "events": {
                        "start": (ev.start - origin).tolist(),
                        "dur": ev.dur.tolist(),
                        "depth": ev.depth.tolist(),
                        "name": ev.name_id.tolist(),
                        "kind": ev.kind.tolist(),
                        "id": ev.event_id.tolist(),
                    },
                    "blocks": {
                        "start": (bl.start - origin).tolist(),
                        "end": (bl.end - origin).tolist(),
                        "depth": bl.depth.tolist(),
                        "count": bl.count.tolist(),
                        "busy": bl.busy_ns.tolist(),
                        "name": bl.name_id.tolist(),
                        "kind": bl.kind.tolist(),
                        "id": bl.event_id.tolist(),
                    },
                }
            )
        counters = []
        for track in self.counters:
            entry: dict[str, Any] = {
                "counter_id": track.counter_id,
                "column": track.column.tolist(),
                "span": track.span.tolist(),
                "min": track.min.tolist(),
                "max": track.max.tolist(),
                "mean": track.mean.tolist(),
            }
            if self.counter_names is not None and 0 <= track.counter_id < len(self.counter_names):
                entry["name"] = self.counter_names[track.counter_id]
            counters.append(entry)
        ids = np.unique(np.concatenate(used)) if used else np.zeros(0, dtype=np.int64)
        return {
            "origin_ns": origin,
            "t0": self.t0_ns - origin,
            "t1": self.t1_ns - origin,
            "width_px": self.width_px,
            "ns_per_px": self.ns_per_px,
            "names": {str(i): self.names[i] for i in ids.tolist()},
            "lanes": lanes,
            "counters": counters,
        }
