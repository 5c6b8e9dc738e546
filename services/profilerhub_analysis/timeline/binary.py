"""The binary form of a ``Window`` for the browser (format in ``docs/app-api.md``).

Typed little-endian columns after a small JSON header: ``PHW1``, the header length (uint32), 8
reserved bytes, the header padded with spaces to a multiple of 8, then each column 8-byte aligned.
Times are ns relative to the window start as float32 (sub-pixel exact at any zoom); an integer
column is sent in the narrowest of uint8/16/32 that holds every value of this answer (names,
depths, counts and pixel columns mostly fit 8 or 16 bits), the type named in the header. Roughly
16-26 bytes an item, a fifth of the JSON form.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence

import numpy as np

from .window import Window

MAGIC = b"PHW1"
PREFIX = 16

_TYPES = {"f32": "<f4", "u32": "<u4", "u16": "<u2", "u8": "u1"}


def _pad8(n: int) -> int:
    return (n + 7) // 8 * 8


def _narrowest(values: np.ndarray) -> str:
    top = int(values.max()) if len(values) else 0
    return "u8" if top <= 0xFF else "u16" if top <= 0xFFFF else "u32"


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

    ids = np.unique(np.concatenate(used)) if used else np.zeros(0, dtype=np.int64)
    header = {
        "t0": window.t0_ns - window.origin_ns,
        "t1": window.t1_ns - window.origin_ns,
        "px": window.width_px,
        "ns_per_px": window.ns_per_px,
        "names": {str(i): window.names[i] for i in ids.tolist()},
        "lanes": lanes,
        "counters": counters,
    }
    return _pack(header, ev_parts | bl_parts | ct_parts)


#: (column, type) in body order; integer types are the widest (see ``_narrowest``).
_SPEC = (
    ("ev_start", "f32"), ("ev_dur", "f32"), ("ev_name", "u32"), ("ev_id", "u32"),
    ("ev_depth", "u16"), ("ev_kind", "u8"),
    ("bl_start", "f32"), ("bl_end", "f32"), ("bl_busy", "f32"), ("bl_count", "u32"),
    ("bl_name", "u32"), ("bl_id", "u32"), ("bl_depth", "u16"), ("bl_kind", "u8"),
    ("ct_column", "u32"), ("ct_span", "u32"), ("ct_min", "f32"), ("ct_max", "f32"), ("ct_mean", "f32"),
)  # fmt: skip


def _pack(header: dict, parts: dict[str, list[np.ndarray]]) -> bytes:
    """``header`` (without ``columns``) and the columns' chunks as one answer."""
    body: list[bytes] = []
    columns = {}
    offset = 0
    for name, code in _SPEC:
        chunks = parts.get(name, [])
        values = np.concatenate(chunks) if chunks else np.zeros(0)
        if code == "u8":
            values = np.where(values < 0, 255, values)  # kind -1 (unknown) -> 255
        elif code != "f32":
            code = _narrowest(values)
        data = np.ascontiguousarray(values.astype(_TYPES[code])).tobytes()
        columns[name] = {"type": code, "offset": offset, "length": int(len(values))}
        body.append(data + b"\0" * (_pad8(len(data)) - len(data)))
        offset += _pad8(len(data))
    text = json.dumps(header | {"columns": columns}, separators=(",", ":")).encode()
    text += b" " * (_pad8(len(text)) - len(text))
    return MAGIC + struct.pack("<III", len(text), 0, 0) + text + b"".join(body)


def select_window(data: bytes, lanes: Sequence[int] | None, counters: Sequence[int] | None) -> bytes:
    """An answer of ``encode_window`` cut down to ``lanes`` and ``counters`` (ids, in the order
    given; an id it lacks gets an empty entry; None: all, as they are), as if the window had been
    asked for those alone."""
    if lanes is None and counters is None:
        return data
    header, cols = decode_window(data)
    parts: dict[str, list[np.ndarray]] = {}

    def take(groups: list[dict], wanted: Sequence[int] | None, id_key: str, sizes: dict[str, str],
             empty: dict) -> list[dict]:  # fmt: skip
        """The groups (lanes or counters) asked for, their columns' slices appended to ``parts``."""
        found, offsets = {}, dict.fromkeys(sizes, 0)
        for g in groups:  # a group's items follow the previous groups' items in each column
            found[g[id_key]] = (g, dict(offsets))
            for prefix, count in sizes.items():
                offsets[prefix] += g[count]
        kept = []
        for gid in found if wanted is None else wanted:
            g, at = found.get(gid, ({id_key: gid} | empty, dict.fromkeys(sizes, 0)))
            kept.append(g)
            for name, _ in _SPEC:
                if name[:3] in sizes:
                    first = at[name[:3]]
                    parts.setdefault(name, []).append(cols[name][first : first + g[sizes[name[:3]]]])
        return kept

    empty_lane = {"events": 0, "blocks": 0, "depth_shown": 0, "truncated": False}
    kept_lanes = take(header["lanes"], lanes, "lane_id", {"ev_": "events", "bl_": "blocks"}, empty_lane)
    kept_counters = take(header["counters"], counters, "counter_id", {"ct_": "runs"}, {"runs": 0})
    used = parts.get("ev_name", []) + parts.get("bl_name", [])
    ids = np.unique(np.concatenate(used)) if used else np.zeros(0, dtype=np.int64)
    head = {k: v for k, v in header.items() if k != "columns"}
    names = {str(i): header["names"][str(i)] for i in ids.tolist()}
    return _pack(head | {"names": names, "lanes": kept_lanes, "counters": kept_counters}, parts)


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


__all__ = ["MAGIC", "decode_window", "encode_window", "select_window"]
