"""The binary form of a ``Window`` for the browser (format in ``docs/app-api.md``).

Typed little-endian columns after a small JSON header: ``PHW1``, the header length (uint32), 8
reserved bytes, the header padded with spaces to a multiple of 8, then each column 8-byte aligned.
Times are ns relative to the window start as float32 (sub-pixel exact at any zoom), ids uint32.
Roughly 20-28 bytes an item, a quarter of the JSON form.
"""

from __future__ import annotations

import json
import struct

import numpy as np

from .window import Window

MAGIC = b"PHW1"
PREFIX = 16

#: (column, dtype code, numpy dtype) in body order.
_TYPES = {"f32": "<f4", "u32": "<u4", "u16": "<u2", "u8": "u1"}


def _pad8(n: int) -> int:
    return (n + 7) // 8 * 8


def encode_window(window: Window) -> bytes:
    """The bytes of ``window``: see the module docstring."""
    t0 = window.t0_ns
    lanes, used = [], []
    ev_parts: dict[str, list[np.ndarray]] = {}
    bl_parts: dict[str, list[np.ndarray]] = {}
    ct_parts: dict[str, list[np.ndarray]] = {}

    def put(parts: dict[str, list[np.ndarray]], name: str, values: np.ndarray) -> None:
        parts.setdefault(name, []).append(values)

    for lane in window.lanes:
        ev, bl = lane.events, lane.blocks
        used += [ev.name_id, bl.name_id]
        lanes.append(
            {
                "lane_id": lane.lane_id,
                "events": len(ev),
                "blocks": len(bl),
                "depth_shown": lane.depth_shown,
                "truncated": lane.truncated,
            }
        )
        put(ev_parts, "ev_start", ev.start - t0)
        put(ev_parts, "ev_dur", ev.dur)
        put(ev_parts, "ev_name", ev.name_id)
        put(ev_parts, "ev_id", ev.event_id)
        put(ev_parts, "ev_depth", ev.depth)
        put(ev_parts, "ev_kind", ev.kind)
        put(bl_parts, "bl_start", bl.start - t0)
        put(bl_parts, "bl_end", bl.end - t0)
        put(bl_parts, "bl_busy", bl.busy_ns)
        put(bl_parts, "bl_count", bl.count)
        put(bl_parts, "bl_name", bl.name_id)
        put(bl_parts, "bl_id", bl.event_id)
        put(bl_parts, "bl_depth", bl.depth)
        put(bl_parts, "bl_kind", bl.kind)
    counters = []
    for track in window.counters:
        counters.append({"counter_id": track.counter_id, "runs": len(track.column)})
        put(ct_parts, "ct_column", track.column)
        put(ct_parts, "ct_span", track.span)
        put(ct_parts, "ct_min", track.min)
        put(ct_parts, "ct_max", track.max)
        put(ct_parts, "ct_mean", track.mean)

    spec = (
        ("ev_start", "f32"), ("ev_dur", "f32"), ("ev_name", "u32"), ("ev_id", "u32"),
        ("ev_depth", "u16"), ("ev_kind", "u8"),
        ("bl_start", "f32"), ("bl_end", "f32"), ("bl_busy", "f32"), ("bl_count", "u32"),
        ("bl_name", "u32"), ("bl_id", "u32"), ("bl_depth", "u16"), ("bl_kind", "u8"),
        ("ct_column", "u32"), ("ct_span", "u32"), ("ct_min", "f32"), ("ct_max", "f32"), ("ct_mean", "f32"),
    )  # fmt: skip
    parts = ev_parts | bl_parts | ct_parts
    body: list[bytes] = []
    columns = {}
    offset = 0
    for name, code in spec:
        chunks = parts.get(name, [])
        values = np.concatenate(chunks) if chunks else np.zeros(0)
        if code == "u8":
            values = np.where(values < 0, 255, values)  # kind -1 (unknown) -> 255
        data = np.ascontiguousarray(values.astype(_TYPES[code])).tobytes()
        columns[name] = {"type": code, "offset": offset, "length": int(len(values))}
        body.append(data + b"\0" * (_pad8(len(data)) - len(data)))
        offset += _pad8(len(data))
    ids = np.unique(np.concatenate(used)) if used else np.zeros(0, dtype=np.int64)
    header = {
        "t0": window.t0_ns - window.origin_ns,
        "t1": window.t1_ns - window.origin_ns,
        "px": window.width_px,
        "ns_per_px": window.ns_per_px,
        "names": {str(i): window.names[i] for i in ids.tolist()},
        "lanes": lanes,
        "counters": counters,
        "columns": columns,
    }
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (_pad8(len(text)) - len(text))
    return MAGIC + struct.pack("<III", len(text), 0, 0) + text + b"".join(body)


def decode_window(data: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """(header, columns) of an answer made by ``encode_window`` (what the browser does; tests)."""
    if data[:4] != MAGIC:
        raise ValueError("not a window answer")
    (length, _, _) = struct.unpack("<III", data[4:PREFIX])
    header = json.loads(data[PREFIX : PREFIX + length])
    body = PREFIX + length
    cols = {
        name: np.frombuffer(data, dtype=_TYPES[c["type"]], count=c["length"], offset=body + c["offset"])
        for name, c in header["columns"].items()
    }
    return header, cols


__all__ = ["MAGIC", "decode_window", "encode_window"]
