"""Read a Kineto / Chrome-trace JSON file (plain or gzipped) into typed events.

Fast path: one typed ``msgspec`` decode of only the fields the store needs. A document that the
typed decoder refuses (a field of the wrong type somewhere) is decoded again leniently, event by
event, and the events that still do not fit are counted as skipped instead of failing the file.

Size: the decompressed document must fit under ``max_bytes`` (default 2 GiB, or the environment
variable ``PROFILERHUB_ANALYSIS_MAX_TRACE_BYTES``); decompression stops as soon as it passes the
limit, so an oversized or gzip-bomb upload costs at most that much memory.
"""

from __future__ import annotations

import math
import os
import zlib
from pathlib import Path
from typing import Any

import msgspec

from profilerhub_analysis.errors import TraceFormatError, TraceTooLarge

DEFAULT_MAX_BYTES = 2 << 30
_CHUNK = 64 << 20
NAN = math.nan


def max_trace_bytes() -> int:
    """The configured size limit for one decompressed trace, in bytes."""
    raw = os.environ.get("PROFILERHUB_ANALYSIS_MAX_TRACE_BYTES", "")
    try:
        return int(raw) if raw else DEFAULT_MAX_BYTES
    except ValueError:
        return DEFAULT_MAX_BYTES


class Args(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` keys the store uses; everything else is skipped by the decoder."""

    correlation: int = -1
    stream: int | str | None = -1
    device: int = -1
    bytes: int = -1
    name: str | None = None
    sort_index: int | None = None
    labels: str | None = None
    total_allocated: int | float | None = msgspec.field(name="Total Allocated", default=None)
    total_reserved: int | float | None = msgspec.field(name="Total Reserved", default=None)
    device_id: int = msgspec.field(name="Device Id", default=-1)
    device_type: int = msgspec.field(name="Device Type", default=-1)


_NO_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: int | float = NAN
    dur: int | float = NAN
    args: Args = _NO_ARGS


class TraceDoc(msgspec.Struct):
    """The top-level object of a Kineto trace (only what the store keeps)."""

    traceEvents: list[Event] | None = None  # noqa: N815 - the JSON key
    deviceProperties: Any = None  # noqa: N815
    distributedInfo: Any = None  # noqa: N815
    baseTimeNanoseconds: int | None = None  # noqa: N815
    schemaVersion: Any = None  # noqa: N815
    traceName: Any = None  # noqa: N815


class _LooseDoc(msgspec.Struct):
    traceEvents: Any = None  # noqa: N815
    deviceProperties: Any = None  # noqa: N815
    distributedInfo: Any = None  # noqa: N815
    baseTimeNanoseconds: Any = None  # noqa: N815
    schemaVersion: Any = None  # noqa: N815
    traceName: Any = None  # noqa: N815


class CounterEvent(msgspec.Struct, gc=False):
    """Second, rarer pass for ``ph: "C"`` events, whose ``args`` keys are series names."""

    ph: str = ""
    name: str = ""
    ts: int | float = NAN
    args: dict[str, Any] | None = None


_DOC_DECODER = msgspec.json.Decoder(TraceDoc | list[Event])


class _CounterDoc(msgspec.Struct):
    traceEvents: list[CounterEvent] | None = None  # noqa: N815


_COUNTER_DOC_DECODER = msgspec.json.Decoder(_CounterDoc | list[CounterEvent])


def read_bytes(path: str | Path, max_bytes: int | None = None) -> bytes:
    """The (decompressed) document at ``path``; gzip is detected by its magic bytes."""
    limit = max_trace_bytes() if max_bytes is None else max_bytes
    p = Path(path)
    try:
        with p.open("rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if head != b"\x1f\x8b":
                size = p.stat().st_size
                if size > limit:
                    raise TraceTooLarge(_too_large(p, size, limit))
                return fh.read()
            return _gunzip(fh, p, limit)
    except OSError as exc:
        raise TraceFormatError(f"cannot read {p}: {exc.strerror or exc}") from exc


def _too_large(p: Path, size: int, limit: int) -> str:
    return (
        f"{p.name}: trace is larger than the {limit / 2**20:.0f} MiB limit "
        f"({'over ' if size > limit else ''}{size / 2**20:.0f} MiB decompressed); raise it with "
        f"--max-size or PROFILERHUB_ANALYSIS_MAX_TRACE_BYTES if this machine has the memory"
    )


def _gunzip(fh: Any, p: Path, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    dec = zlib.decompressobj(wbits=31)
    try:
        while True:
            # Large reads: one decompress call per 64 MiB of input is as fast as gzip.decompress,
            # while max_length still stops a gzip bomb at the limit.
            chunk = fh.read(_CHUNK)
            if not chunk:
                break
            while chunk:
                out = dec.decompress(chunk, limit + 1 - total)
                total += len(out)
                parts.append(out)
                if total > limit:
                    raise TraceTooLarge(_too_large(p, total, limit))
                chunk = dec.unconsumed_tail
                if dec.eof and dec.unused_data:
                    # another gzip member follows (concatenated .gz files are valid gzip)
                    chunk = dec.unused_data + chunk
                    dec = zlib.decompressobj(wbits=31)
    except zlib.error as exc:
        raise TraceFormatError(f"{p.name}: not a valid gzip file ({exc})") from exc
    if not dec.eof:
        raise TraceFormatError(f"{p.name}: gzip data is truncated (the file ended early)")
    return b"".join(parts)


class Decoded(msgspec.Struct):
    """The typed events of one document plus its header and what was skipped."""

    events: list[Event]
    doc: TraceDoc
    events_total: int
    skipped: dict[str, int]


def decode(data: bytes, source: str = "trace") -> Decoded:
    """Decode a Chrome-trace document (object with ``traceEvents``, or a bare event array)."""
    skipped: dict[str, int] = {}
    try:
        parsed = _DOC_DECODER.decode(data)
    except msgspec.ValidationError:
        parsed = _decode_leniently(data, source, skipped)
    except msgspec.DecodeError as exc:
        raise TraceFormatError(f"{source}: not valid JSON ({exc})") from exc
    doc = TraceDoc(traceEvents=parsed) if isinstance(parsed, list) else parsed
    if doc.traceEvents is None:
        raise TraceFormatError(f"{source}: no 'traceEvents' list; is this a PyTorch profiler trace?")
    events = doc.traceEvents
    total = len(events) + sum(skipped.values())
    return Decoded(events=events, doc=doc, events_total=total, skipped=skipped)


def _decode_leniently(data: bytes, source: str, skipped: dict[str, int]) -> TraceDoc | list[Event]:
    try:
        loose = msgspec.json.decode(data, type=_LooseDoc | list[Any])
    except msgspec.ValidationError as exc:  # (a subclass of DecodeError)
        raise TraceFormatError(f"{source}: not a trace document ({exc})") from exc
    except msgspec.DecodeError as exc:
        raise TraceFormatError(f"{source}: not valid JSON ({exc})") from exc
    raw_events = loose if isinstance(loose, list) else loose.traceEvents
    if raw_events is None:
        raise TraceFormatError(f"{source}: no 'traceEvents' list; is this a PyTorch profiler trace?")
    if not isinstance(raw_events, list):
        raise TraceFormatError(f"{source}: 'traceEvents' is not a list")
    events: list[Event] = []
    bad = 0
    for raw in raw_events:  # slow path, only for documents the typed decoder refused
        if isinstance(raw, dict) and raw.get("args", 0) is None:
            raw = {k: v for k, v in raw.items() if k != "args"}  # "args": null means no args
        try:
            events.append(msgspec.convert(raw, Event, strict=False))
        except msgspec.ValidationError:
            bad += 1
    if bad:
        skipped["malformed event"] = bad
    if isinstance(loose, list):
        return events
    header: dict[str, Any] = {}
    for key in ("deviceProperties", "distributedInfo", "schemaVersion", "traceName"):
        header[key] = getattr(loose, key)
    base = loose.baseTimeNanoseconds
    header["baseTimeNanoseconds"] = base if isinstance(base, int) and not isinstance(base, bool) else None
    return TraceDoc(traceEvents=events, **header)


def decode_counters(data: bytes) -> list[CounterEvent]:
    """The ``ph: "C"`` events of a document, with their free-form ``args`` (a second pass)."""
    try:
        parsed = _COUNTER_DOC_DECODER.decode(data)
    except msgspec.MsgspecError:
        return []
    events = parsed if isinstance(parsed, list) else (parsed.traceEvents or [])
    return [e for e in events if e.ph == "C"]


__all__ = [
    "DEFAULT_MAX_BYTES",
    "CounterEvent",
    "Decoded",
    "Event",
    "TraceDoc",
    "decode",
    "decode_counters",
    "max_trace_bytes",
    "read_bytes",
]
