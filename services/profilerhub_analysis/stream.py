"""Read a trace file as a stream: decompress, cut ``traceEvents`` into slices, decode each slice.

``reader.decode`` needs the whole document in memory (and, for large ones, its events' raw JSON
beside it); this module never holds more than one slice of it. The result is the same ``Decoded``
(``build.build_store`` consumes it batch by batch), so the event store is identical; only the
document's memory is gone: what is held is one slice (``SLICE_BYTES`` of JSON and its typed
events) and the header outside ``traceEvents``.

How a slice is cut (``_last_event_end``, vectorised with numpy, no Python loop per byte): every
slice starts *between* two events of the array, outside any string. In it, the quotes that are not
escaped (a quote preceded by an odd run of backslashes is escaped) open and close strings; the
brackets ``{}[]`` outside strings (an even number of unescaped quotes before them) give the
nesting depth, counted from the array's level. The slice ends after the last bracket that brings
the depth back to 0 (the end of an event); if the depth drops to -1 first, that ``]`` closes
``traceEvents``. What follows the cut (part of an event) starts the next slice. A slice is
decoded as ``[`` + its events + ``]`` by the same typed decoder as a whole document, and where
that refuses an event, by ``reader``'s tolerant decode, which costs only the refused event.

The header (``deviceProperties``, ``distributedInfo``, ``baseTimeNanoseconds``, ...) is whatever
lies outside the array, before or after it: its bytes are decoded at the end as a document whose
``traceEvents`` is empty, with the lenient reader's rules for fields of a wrong type. TensorFlow's
end marker (a last event ``{}`` after a comma, see ``reader``) is dropped as ``reader`` drops it;
the dialect is sniffed from the first MiB, as there.

Size: ``max_bytes`` bounds the decompressed document as it streams (a gzip bomb stops there); the
streamed reader itself needs no more memory for a larger trace, only the columns built from it do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec
import numpy as np

from profilerhub_analysis.errors import TraceFormatError
from profilerhub_analysis.events import TraceEvent
from profilerhub_analysis.reader import (
    _SNIFF_BYTES,
    Decoded,
    Dialect,
    TraceDoc,
    _decode_tolerantly,
    _LooseDoc,
    dialect_of,
)

#: Decompressed JSON per slice: what the reader holds of the document at once (with its events).
SLICE_BYTES = 8 << 20
#: The header (the document outside ``traceEvents``) and one event may not pass this.
MAX_HEADER_BYTES = 256 << 20
_MIB_CAP = MAX_HEADER_BYTES >> 20

_QUOTE, _BACKSLASH = 34, 92
_OPENS = np.zeros(256, dtype=bool)
_OPENS[[ord("{"), ord("[")]] = True
_BRACKETS = _OPENS.copy()
_BRACKETS[[ord("}"), ord("]")]] = True
_KEY = re.compile(rb'"traceEvents"\s*:\s*')
_WS = b" \t\r\n"
_END_MARKER = re.compile(rb",\s*\{\s*\}\s*$")
_SUFFIX_WITHOUT_BRACKETS = re.compile(rb"[^\[\]{}]*\}?\s*$")
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
#: ``}`` looked at, and guesses decoded, before a slice's end is found by the exact scan instead.
_GUESSES = 64
_DECODE_TRIES = 2


Lenient = Callable[[list[msgspec.Raw]], list[Any]]


class _NotACut(Exception):
    """A guessed end of a slice that is not the end of an event."""


def _unescaped_quotes(a: np.ndarray) -> np.ndarray:
    """Positions of the quotes in ``a`` that are not escaped (an odd run of ``\\`` before)."""
    q = np.flatnonzero(a == _QUOTE)
    cand = np.flatnonzero((a[np.maximum(q - 1, 0)] == _BACKSLASH) & (q > 0))
    if not len(cand):
        return q
    pos = q[cand]
    run = np.ones(len(pos), dtype=np.int64)
    alive = np.ones(len(pos), dtype=bool)
    k = 2
    while alive.any():  # once per backslash of the longest run
        before = pos - k
        alive &= (before >= 0) & (a[np.maximum(before, 0)] == _BACKSLASH)
        run += alive
        k += 1
    escaped = np.zeros(len(q), dtype=bool)
    escaped[cand[run % 2 == 1]] = True
    return q[~escaped]


def _structure(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unescaped quotes, brackets outside strings, depth after each of those brackets)."""
    quotes = _unescaped_quotes(a)
    brackets = np.flatnonzero(_BRACKETS[a])
    brackets = brackets[(np.searchsorted(quotes, brackets) & 1) == 0]
    depth = np.cumsum(np.where(_OPENS[a[brackets]], 1, -1))
    return quotes, brackets, depth


def _last_event_end(buf: bytes) -> tuple[int, int]:
    """In ``buf`` (starting between two events of the array): (the end of its last complete event
    or 0, the position of the ``]`` that closes the array or -1)."""
    a = np.frombuffer(buf, dtype=np.uint8)
    _, brackets, depth = _structure(a)
    closed = np.flatnonzero(depth < 0)
    close = int(brackets[closed[0]]) if len(closed) else -1
    level = np.flatnonzero(depth[: closed[0]] == 0 if len(closed) else depth == 0)
    return (int(brackets[level[-1]]) + 1 if len(level) else 0), close


def _find_array(buf: bytes, source: str) -> int | None:
    """The position after ``traceEvents``' ``[`` in ``buf`` (the document's start); None when
    ``buf`` does not reach it yet, -1 when the document shows it has none (or is no object or
    array): the whole-document reader then says what it is. ``TraceFormatError`` when
    ``traceEvents`` is not a list."""
    stripped = buf.lstrip(_WS)
    if not stripped:
        return None
    if stripped[:1] == b"[":
        return len(buf) - len(stripped) + 1
    if stripped[:1] != b"{":
        return -1
    a = np.frombuffer(buf, dtype=np.uint8)
    quotes, brackets, depth = _structure(a)
    for m in _KEY.finditer(buf):
        at = m.start()
        i = int(np.searchsorted(quotes, at))
        if i >= len(quotes) or quotes[i] != at or i % 2:
            continue  # inside a string
        j = int(np.searchsorted(brackets, at))
        if j == 0 or depth[j - 1] != 1:
            continue  # a key of a nested object
        value = buf[m.end() : m.end() + 4]
        if value[:1] == b"[":
            return m.end() + 1
        if len(value) < 4 and b"null".startswith(value):
            return None
        if value == b"null":
            return -1
        raise TraceFormatError(f"{source}: 'traceEvents' is not a list")
    return None


class StreamedDecoded(Decoded):
    """A ``Decoded`` whose batches are decoded from a stream as they are asked for; ``doc``,
    ``events_total`` and ``skipped`` are complete once ``batches()`` has run to its end."""

    def __init__(
        self,
        chunks: Iterator[bytes],
        head: bytes,
        start: int,
        dialect: Dialect,
        source: str,
        lenient: Lenient | None = None,
    ) -> None:
        super().__init__(doc=TraceDoc(), events_total=0, skipped={}, dialect=dialect)
        self._chunks = chunks
        self._lenient = lenient
        self._prefix = head[:start]
        self._rest = head[start:]
        self._source = source
        self._count = 0

    def batches(self) -> Iterator[list[TraceEvent]]:
        buf, self._rest = self._rest, b""
        first, exhausted = True, False
        while True:
            while not exhausted and len(buf) < SLICE_BYTES:
                chunk = next(self._chunks, None)
                exhausted = chunk is None
                buf += chunk or b""
            found = None if exhausted else self._guess(buf, first)
            if found is not None:
                cut, events = found
            else:
                cut, close = _last_event_end(buf)
                if close >= 0:
                    events = self._last_slice(buf[:close], self._suffix(buf[close + 1 :]), first)
                    if events:
                        yield events
                    return
                if exhausted:
                    raise TraceFormatError(f"{self._source}: not valid JSON (it ends inside 'traceEvents')")
                held = _END_MARKER.search(buf, max(0, cut - 256), cut)
                if held is not None:  # perhaps TensorFlow's end marker: decided at the array's end
                    cut = held.start()
                if cut == 0:  # not one whole event yet: read on
                    if len(buf) > MAX_HEADER_BYTES:
                        raise TraceFormatError(f"{self._source}: an event larger than {_MIB_CAP} MiB")
                    chunk = next(self._chunks, None)
                    exhausted = chunk is None
                    buf += chunk or b""
                    continue
                events = self._decode_slice(buf[:cut], first)
            buf = buf[cut:]
            first = False
            if events:
                yield events
            del events

    def _guess(self, buf: bytes, first: bool) -> tuple[int, list[TraceEvent]] | None:
        """The slice's events up to a likely end of an event near the end of ``buf``: a ``}``
        followed by a comma, accepted when the decoder takes what lies before it (a ``}`` inside a
        string leaves that string open, one inside an event leaves a bracket open: neither decodes).
        None after a few guesses that do not decode: the exact scan decides."""
        end, tries = len(buf), 0
        for _ in range(_GUESSES):
            at = buf.rfind(b"}", 0, end)
            if at < 0:
                return None
            end = at
            if buf[at + 1 : at + 65].lstrip(_WS)[:1] != b",":
                continue
            try:
                return at + 1, self._decode_slice(buf[: at + 1], first, guess=True)
            except _NotACut:
                tries += 1
                if tries == _DECODE_TRIES:
                    return None
        return None

    def _last_slice(self, body: bytes, suffix: bytes, first: bool) -> list[TraceEvent]:
        """The events before the array's ``]`` (less TensorFlow's end marker); the header read."""
        marker = _END_MARKER.search(body, max(0, len(body) - 256))
        if marker is not None and _SUFFIX_WITHOUT_BRACKETS.fullmatch(suffix):
            body = body[: marker.start()]
        events = self._decode_slice(body, first)
        self.events_total = self._count + sum(self.skipped.values())
        if self._prefix.strip(_WS) == b"[":  # a bare event array
            if suffix.strip(_WS):
                raise TraceFormatError(f"{self._source}: not valid JSON (data after the event array)")
        else:
            self.doc = header_doc(self._prefix + b"]" + suffix, self._source)
        return events

    def _decode_slice(self, body: bytes, first: bool, guess: bool = False) -> list[TraceEvent]:
        """The events of ``body`` (whole events, after a comma unless ``first``); with ``guess``,
        ``_NotACut`` where it is no valid JSON."""
        body = body.strip(_WS)
        if not body:
            return []
        if not first:
            if body[:1] != b",":
                raise TraceFormatError(f"{self._source}: not valid JSON (events not separated by a comma)")
            body = body[1:]
            if not body.strip(_WS):
                raise TraceFormatError(f"{self._source}: not valid JSON (a comma before the array's end)")
        data = b"[" + body + b"]"
        try:
            events: list[TraceEvent] = self.dialect.events.decode(data)
        except msgspec.ValidationError:
            try:
                raw = _RAW_LIST.decode(data)
            except msgspec.DecodeError as exc:
                raise (
                    _NotACut() if guess else TraceFormatError(f"{self._source}: not valid JSON ({exc})")
                ) from exc
            if self._lenient is not None:
                events = self._lenient(raw)
            else:
                events, lenient = _decode_tolerantly(raw, self.skipped, self.dialect)
                self.lenient_events += lenient
        except msgspec.DecodeError as exc:
            raise (
                _NotACut() if guess else TraceFormatError(f"{self._source}: not valid JSON ({exc})")
            ) from exc
        self._count += len(events)
        return events

    def _suffix(self, tail: bytes) -> bytes:
        parts, size = [tail], len(tail)
        for chunk in self._chunks:
            size += len(chunk)
            if size > MAX_HEADER_BYTES:
                raise TraceFormatError(
                    f"{self._source}: more than {MAX_HEADER_BYTES >> 20} MiB after 'traceEvents'"
                )
            parts.append(chunk)
        return b"".join(parts)


def header_doc(data: bytes, source: str) -> TraceDoc:
    """The header fields of a document whose ``traceEvents`` is empty (wrong types as absent, like
    the lenient reader)."""
    try:
        loose = msgspec.json.decode(data, type=_LooseDoc)
    except msgspec.ValidationError as exc:
        raise TraceFormatError(f"{source}: not a trace document ({exc})") from exc
    except msgspec.DecodeError as exc:
        raise TraceFormatError(f"{source}: not valid JSON ({exc})") from exc
    base = loose.baseTimeNanoseconds
    return TraceDoc(
        traceEvents=[],
        deviceProperties=loose.deviceProperties,
        distributedInfo=loose.distributedInfo,
        baseTimeNanoseconds=base if isinstance(base, int) and not isinstance(base, bool) else None,
        schemaVersion=loose.schemaVersion,
        traceName=loose.traceName,
    )


def decode_stream(
    chunks: Iterable[bytes],
    source: str = "trace",
    dialect: Dialect | None = None,
    lenient: Lenient | None = None,
) -> Decoded:
    """A ``Decoded`` over the document arriving in ``chunks`` (``reader.file_chunks``).

    ``dialect`` (default: sniffed, Kineto or TensorFlow) and ``lenient`` (what becomes of a slice's
    events the typed decoder refuses, given their raw JSON; default ``reader``'s tolerant decode)
    let another reader of the same documents (the TensorBoard views' own event types) stream too.

    A document with no ``traceEvents`` array (or none in its first ``MAX_HEADER_BYTES``), or
    that is no object or array, is read whole by ``reader.decode``: to raise its error, or, for
    the rare document whose header is that large, to read it anyway.
    """
    from profilerhub_analysis.reader import decode

    it = iter(chunks)
    head = b""
    start: int | None = None
    for chunk in it:
        head += chunk
        start = _find_array(head, source)
        if start is not None or len(head) > MAX_HEADER_BYTES:
            break
    if start is None or start < 0:
        return decode(bytearray(head + b"".join(it)), source)
    while len(head) < _SNIFF_BYTES:  # the dialect is sniffed from the first MiB, as reader does
        more = next(it, None)
        if more is None:
            break
        head += more
    return StreamedDecoded(it, head, start, dialect or dialect_of(head), source, lenient)


__all__ = ["MAX_HEADER_BYTES", "SLICE_BYTES", "StreamedDecoded", "decode_stream", "header_doc"]
