"""Read a Kineto / Chrome-trace JSON file (plain or gzipped) into typed events.

This module decodes a whole document in memory (``read_bytes`` + ``decode``); ``stream`` reads a
file in slices with the same decoders (``file_chunks`` + ``stream.decode_stream``), which is what
``build.load_trace`` does.

Fast path: one typed ``msgspec`` decode of only the fields the store needs. A document that the
typed decoder refuses (a field of the wrong type somewhere: a string ``args.bytes``) costs only
the events it refuses, not the fast path: the document is split into its events' raw JSON (a
tokenizing pass, no objects), and the typed decoder runs over them again; where it refuses one,
it names its index (``at `$[i]...```), the events before it are decoded typed, that one alone
leniently (numbers written as strings are read, an event that still does not fit is counted as
skipped), and the typed decode resumes after it (``_decode_tolerantly``). ``Decoded.lenient_events``
says how many events took the slow way.

TensorFlow traces are decoded with event types of their own (``TfComplete``: their arguments
have other names and string values), chosen when TF's plane names (``/host:CPU``,
``/device:GPU:0``) occur in the first MiB, where TF writes its metadata. TF's exporter (TF 2.x
before xprof) ends ``traceEvents`` with one empty ``{}`` to mark the end; it is cut from the
document's tail before decoding, so it neither sends the document down the lenient path nor
counts as an event.

Size: the decompressed document must fit under ``max_bytes`` (default 4 GiB, or the environment
variable ``PROFILERHUB_ANALYSIS_MAX_TRACE_BYTES``); decompression stops as soon as it passes the
limit, so an oversized or gzip-bomb upload costs at most that much memory.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from profilerhub_analysis.errors import TraceFormatError, TraceTooLarge
from profilerhub_analysis.events import KNOWN_PHASES, AnyEvent, TfAnyEvent, TraceEvent, UnknownPhase

DEFAULT_MAX_BYTES = 4 << 30
_CHUNK = 64 << 20
_READ_BYTES = 1 << 20


def max_trace_bytes() -> int:
    """The configured size limit for one decompressed trace, in bytes."""
    raw = os.environ.get("PROFILERHUB_ANALYSIS_MAX_TRACE_BYTES", "")
    try:
        return int(raw) if raw else DEFAULT_MAX_BYTES
    except ValueError:
        return DEFAULT_MAX_BYTES


class TraceDoc(msgspec.Struct):
    """The top-level object of a Kineto trace (only what the store keeps)."""

    traceEvents: list[AnyEvent] | None = None  # noqa: N815 - the JSON key
    deviceProperties: Any = None  # noqa: N815
    distributedInfo: Any = None  # noqa: N815
    baseTimeNanoseconds: int | None = None  # noqa: N815
    schemaVersion: Any = None  # noqa: N815
    traceName: Any = None  # noqa: N815


class TfTraceDoc(TraceDoc):
    """The top-level object of a TensorFlow trace."""

    traceEvents: list[TfAnyEvent] | None = None  # noqa: N815 - the JSON key


class _LooseDoc(msgspec.Struct):
    traceEvents: Any = None  # noqa: N815
    deviceProperties: Any = None  # noqa: N815
    distributedInfo: Any = None  # noqa: N815
    baseTimeNanoseconds: Any = None  # noqa: N815
    schemaVersion: Any = None  # noqa: N815
    traceName: Any = None  # noqa: N815


class Dialect(NamedTuple):
    """How one family of traces decodes: the document, a batch of events, one event."""

    tensorflow: bool
    doc: msgspec.json.Decoder[Any]
    events: msgspec.json.Decoder[Any]
    event: Any


KINETO = Dialect(
    False, msgspec.json.Decoder(TraceDoc | list[AnyEvent]), msgspec.json.Decoder(list[AnyEvent]), AnyEvent
)
TENSORFLOW = Dialect(
    True,
    msgspec.json.Decoder(TfTraceDoc | list[TfAnyEvent]),
    msgspec.json.Decoder(list[TfAnyEvent]),
    TfAnyEvent,
)
_TF_PLANE = re.compile(rb"/(?:host:CPU|device:[A-Za-z_]+:\d+)\b")
_SNIFF_BYTES = 1 << 20


def dialect_of(data: bytes | bytearray) -> Dialect:
    """TENSORFLOW when a TF plane name occurs in the document's first MiB, else KINETO."""
    return TENSORFLOW if _TF_PLANE.search(data, 0, _SNIFF_BYTES) else KINETO


def read_bytes(path: str | Path, max_bytes: int | None = None) -> bytes | bytearray:
    """The (decompressed) document at ``path``; gzip is detected by its magic bytes."""
    # mutable: decode blanks TF's end marker in place
    return bytearray().join(file_chunks(path, max_bytes, size=_CHUNK))


def _too_large(p: Path, size: int, limit: int) -> str:
    return (
        f"{p.name}: trace is larger than the {limit / 2**20:.0f} MiB limit "
        f"({'over ' if size > limit else ''}{size / 2**20:.0f} MiB decompressed); raise it with "
        f"--max-size or PROFILERHUB_ANALYSIS_MAX_TRACE_BYTES if this machine has the memory"
    )


def file_chunks(path: str | Path, max_bytes: int | None = None, size: int = _CHUNK) -> Iterator[bytes]:
    """The decompressed bytes of ``path`` in chunks of at most ``size`` (gzip by its magic bytes);
    ``TraceTooLarge`` as soon as more than ``max_bytes`` came out, ``TraceFormatError`` for a
    file that cannot be read or a broken or truncated gzip stream."""
    limit = max_trace_bytes() if max_bytes is None else max_bytes
    p = Path(path)
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise TraceFormatError(f"cannot read {p}: {exc.strerror or exc}") from exc
    with fh:
        head = fh.read(2)
        fh.seek(0)
        if head != b"\x1f\x8b":
            total = p.stat().st_size
            if total > limit:
                raise TraceTooLarge(_too_large(p, total, limit))
            while chunk := fh.read(size):
                yield chunk
            return
        yield from _gunzip_chunks(fh, p, limit, size)


def _gunzip_chunks(fh: Any, p: Path, limit: int, size: int) -> Iterator[bytes]:
    total = 0
    dec = zlib.decompressobj(wbits=31)
    try:
        while chunk := fh.read(_READ_BYTES):
            while chunk:
                out = dec.decompress(chunk, size)
                total += len(out)
                if total > limit:
                    raise TraceTooLarge(_too_large(p, total, limit))
                if out:
                    yield out
                chunk = dec.unconsumed_tail
                if dec.eof and dec.unused_data:  # another gzip member follows
                    chunk = dec.unused_data + chunk
                    dec = zlib.decompressobj(wbits=31)
    except zlib.error as exc:
        raise TraceFormatError(f"{p.name}: not a valid gzip file ({exc})") from exc
    if not dec.eof:
        raise TraceFormatError(f"{p.name}: gzip data is truncated (the file ended early)")


#: Documents larger than this are decoded in batches of ``BATCH_EVENTS`` events, so the typed
#: events of the whole trace never exist at once: peak memory is about the document, one batch
#: and the finished columns, instead of several times the document.
BATCH_THRESHOLD_BYTES = 256 << 20
BATCH_EVENTS = 500_000


class _RawDoc(msgspec.Struct):
    traceEvents: list[msgspec.Raw] | None = None  # noqa: N815
    deviceProperties: Any = None  # noqa: N815
    distributedInfo: Any = None  # noqa: N815
    baseTimeNanoseconds: int | None = None  # noqa: N815
    schemaVersion: Any = None  # noqa: N815
    traceName: Any = None  # noqa: N815


_RAW_DECODER = msgspec.json.Decoder(_RawDoc | list[msgspec.Raw])


class Decoded:
    """One decoded document: its header, event count, skipped events and the typed events,
    handed out in batches (one batch holding every event unless the document is large)."""

    def __init__(
        self,
        doc: TraceDoc,
        events_total: int,
        skipped: dict[str, int],
        events: list[TraceEvent] | None = None,
        raw_events: list[msgspec.Raw] | None = None,
        batch_size: int | None = None,
        dialect: Dialect = KINETO,
    ) -> None:
        self.doc = doc
        self.dialect = dialect
        self.events_total = events_total
        self.skipped = skipped
        self._events = events
        self._raw = raw_events
        self._batch_size = batch_size or BATCH_EVENTS
        self.lenient_events = 0
        """How many events the typed decoder refused, decoded one by one instead."""

    def batches(self) -> Iterator[list[TraceEvent]]:
        """The events in file order, in batches; lenient decoding may add to ``skipped``."""
        if self._raw is None:
            yield self._events or []
            return
        for start in range(0, len(self._raw), self._batch_size):
            part = self._raw[start : start + self._batch_size]
            events, lenient = _decode_tolerantly(part, self.skipped, self.dialect)
            self.lenient_events += lenient
            yield events


#: The end of a document whose event list closes with TensorFlow's empty end marker ``{}``.
_END_MARKER = re.compile(rb",\s*\{\s*\}(\s*\][^\[\]{}]*\}?\s*)$")
_TAIL_BYTES = 256


def _without_end_marker(data: bytes | bytearray) -> bytes | bytearray:
    """``data`` less a trailing ``,{}`` event (TensorFlow's end marker): blanked in place in a
    ``bytearray`` (what ``read_bytes`` gives of a gzipped trace), else a copy, only when present."""
    tail = data[-_TAIL_BYTES:]
    m = _END_MARKER.search(tail)
    if m is None:
        return data
    start, end = len(data) - len(tail) + m.start(), len(data) - len(tail) + m.start(1)
    if isinstance(data, bytearray):
        data[start:end] = b" " * (end - start)  # whitespace: the same length, still valid JSON
        return data
    return data[:start] + m.group(1)


def decode(data: bytes | bytearray, source: str = "trace") -> Decoded:
    """Decode a Chrome-trace document (object with ``traceEvents``, or a bare event array)."""
    data = _without_end_marker(data)
    dialect = dialect_of(data)
    if len(data) > BATCH_THRESHOLD_BYTES:
        batched = _decode_in_batches(data, dialect)
        if batched is not None:
            return batched
    skipped: dict[str, int] = {}
    lenient = 0
    try:
        parsed = dialect.doc.decode(data)
    except msgspec.ValidationError:
        split = _decode_in_batches(data, dialect)  # the typed decoder again, around what it refused
        if split is not None and split._raw is not None:
            events, lenient = _decode_tolerantly(split._raw, skipped, dialect)
            split.doc.traceEvents = events
            parsed = split.doc
        else:  # a header field the raw split refuses too: every event the slow way
            parsed = _decode_leniently(data, source, skipped, dialect)
            lenient = len(parsed if isinstance(parsed, list) else parsed.traceEvents or [])
    except msgspec.DecodeError as exc:
        raise TraceFormatError(f"{source}: not valid JSON ({exc})") from exc
    doc = TraceDoc(traceEvents=parsed) if isinstance(parsed, list) else parsed
    if doc.traceEvents is None:
        raise TraceFormatError(
            f"{source}: no 'traceEvents' list; is this a PyTorch or TensorFlow profiler trace?"
        )
    events = doc.traceEvents
    total = len(events) + sum(skipped.values())
    decoded = Decoded(doc=doc, events_total=total, skipped=skipped, events=events, dialect=dialect)
    decoded.lenient_events = lenient
    return decoded


def _decode_in_batches(data: bytes | bytearray, dialect: Dialect) -> Decoded | None:
    """The large-document path; None when the document needs the lenient whole-document path."""
    try:
        parsed = _RAW_DECODER.decode(data)
    except msgspec.DecodeError:  # ValidationError included: let the normal path explain
        return None
    if isinstance(parsed, list):
        raw, doc = parsed, TraceDoc()
    else:
        if parsed.traceEvents is None:
            return None
        raw = parsed.traceEvents
        doc = TraceDoc(
            deviceProperties=parsed.deviceProperties,
            distributedInfo=parsed.distributedInfo,
            baseTimeNanoseconds=parsed.baseTimeNanoseconds,
            schemaVersion=parsed.schemaVersion,
            traceName=parsed.traceName,
        )
    return Decoded(doc=doc, events_total=len(raw), skipped={}, raw_events=raw, dialect=dialect)


_REFUSED_AT = re.compile(r"at `\$\[(\d+)\]")


def _refused_index(exc: msgspec.ValidationError) -> int | None:
    """The index of the event the typed decoder refused (``... - at `$[12].args.bytes```)."""
    m = _REFUSED_AT.search(str(exc))
    return int(m.group(1)) if m else None


def _joined(raw: Sequence[msgspec.Raw]) -> bytes:
    return b"[" + b",".join(raw) + b"]"


def _decode_tolerantly(
    raw: Sequence[msgspec.Raw], skipped: dict[str, int], dialect: Dialect
) -> tuple[list[TraceEvent], int]:
    """The events of ``raw`` (each one event's JSON), typed where the typed decoder takes them.

    Where it refuses one, the events before it (which it validated) are decoded typed, that one
    leniently, and the typed decode resumes after it over a window twice as long as the stretch
    that had passed (at least ``_MIN_WINDOW``; doubling while it succeeds), so a refused event costs
    about the stretch before it once more, never the whole document. Returns the events and how
    many went the lenient way.
    """
    events: list[TraceEvent] = []
    lenient, pos, window = 0, 0, len(raw)
    while pos < len(raw):
        part = raw[pos : pos + window]
        try:
            events += dialect.events.decode(_joined(part))
            pos, window = pos + len(part), window * 2
            continue
        except msgspec.ValidationError as exc:
            bad = _refused_index(exc)
        if bad is None or bad >= len(part):  # not said where: this window the slow way
            bad = len(part)
        elif bad:
            events += dialect.events.decode(_joined(part[:bad]))
        refused = part[bad : bad + 1] if bad < len(part) else part
        events += _convert_leniently([msgspec.json.decode(r) for r in refused], skipped, dialect)
        lenient += len(refused)
        pos += bad + 1 if bad < len(part) else len(part)
        window = max(2 * bad, _MIN_WINDOW)
    return events, lenient


_MIN_WINDOW = 1024


def _convert_leniently(raw_events: list[Any], skipped: dict[str, int], dialect: Dialect) -> list[TraceEvent]:
    """Events one by one (slow path, only for documents the typed decoder refused)."""
    events: list[TraceEvent] = []
    bad = 0
    for raw in raw_events:
        if isinstance(raw, dict):
            if raw.get("args", 0) is None:
                raw = {k: v for k, v in raw.items() if k != "args"}  # "args": null means no args
            if raw.get("ph") not in KNOWN_PHASES:
                events.append(UnknownPhase())
                continue
        try:
            events.append(msgspec.convert(raw, dialect.event, strict=False))
        except msgspec.ValidationError:
            bad += 1
    if bad:
        skipped["malformed event"] = skipped.get("malformed event", 0) + bad
    return events


def _decode_leniently(
    data: bytes | bytearray, source: str, skipped: dict[str, int], dialect: Dialect
) -> TraceDoc | list[TraceEvent]:
    try:
        loose = msgspec.json.decode(data, type=_LooseDoc | list[Any])
    except msgspec.ValidationError as exc:  # (a subclass of DecodeError)
        raise TraceFormatError(f"{source}: not a trace document ({exc})") from exc
    except msgspec.DecodeError as exc:
        raise TraceFormatError(f"{source}: not valid JSON ({exc})") from exc
    raw_events = loose if isinstance(loose, list) else loose.traceEvents
    if raw_events is None:
        raise TraceFormatError(
            f"{source}: no 'traceEvents' list; is this a PyTorch or TensorFlow profiler trace?"
        )
    if not isinstance(raw_events, list):
        raise TraceFormatError(f"{source}: 'traceEvents' is not a list")
    events = _convert_leniently(raw_events, skipped, dialect)
    if isinstance(loose, list):
        return events
    header: dict[str, Any] = {}
    for key in ("deviceProperties", "distributedInfo", "schemaVersion", "traceName"):
        header[key] = getattr(loose, key)
    base = loose.baseTimeNanoseconds
    header["baseTimeNanoseconds"] = base if isinstance(base, int) and not isinstance(base, bool) else None
    return TraceDoc(traceEvents=events, **header)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "KINETO",
    "TENSORFLOW",
    "Decoded",
    "Dialect",
    "TfTraceDoc",
    "TraceDoc",
    "decode",
    "dialect_of",
    "file_chunks",
    "max_trace_bytes",
    "read_bytes",
]
