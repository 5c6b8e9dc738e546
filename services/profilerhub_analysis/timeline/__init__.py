"""Timeline level of detail: what a screen of N pixels shows of a trace, at any zoom.

Build a ``TimelineIndex`` once per trace from plain arrays (or an event store), then call
``index.window(t0_ns, t1_ns, width_px, lanes=..., min_px=1.0)`` on every pan and zoom; the answer
(``Window``) holds, per lane, the events wide enough to draw as they are, the narrower ones merged
into blocks wherever no gap of a pixel separates them, and counter tracks downsampled to the
width. ``Window.to_dict()`` is the JSON for the browser. See "Timeline level of detail" in
``docs/analysis.md``.
"""

from .counters import CounterIndex, CounterTrack
from .index import MAX_WIDTH_PX, TimelineIndex, column_edges
from .window import Blocks, Events, LaneWindow, Window

__all__ = [
    "MAX_WIDTH_PX",
    "Blocks",
    "CounterIndex",
    "CounterTrack",
    "Events",
    "LaneWindow",
    "TimelineIndex",
    "Window",
    "column_edges",
]
