"""The streamed reader builds the store the whole-document reader builds, holding one slice at a time."""

from __future__ import annotations

import gzip
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

import profilerhub_analysis.stream as stream
from profilerhub_analysis.build import build_store, load_trace, parse_trace
from profilerhub_analysis.errors import TraceFormatError, TraceTooLarge
from profilerhub_analysis.reader import read_bytes
from profilerhub_analysis.store import EventStore

from .tracegen import encode, kernel, runtime


def _pieces(data: bytes, size: int) -> Iterator[bytes]:
    for at in range(0, len(data), size):
        yield data[at : at + size]


def _streamed(data: bytes, size: int) -> EventStore:
    return build_store(stream.decode_stream(_pieces(data, size), "trace"), "trace")


def _assert_same(a: EventStore, b: EventStore) -> None:
    assert a.events.equals(b.events)
    assert a.lanes.equals(b.lanes)
    assert a.counters.equals(b.counters)
    assert a.name_list == b.name_list
    assert a.meta == b.meta


def _shared_traces(shared_dir: Path) -> list[Path]:
    return sorted(p for p in (shared_dir / "traces").rglob("*") if p.name.endswith((".json", ".json.gz")))


def test_streamed_store_equals_the_whole_document_store_on_every_shared_trace(
    shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = _shared_traces(shared_dir)
    assert len(traces) == 16
    monkeypatch.setattr(stream, "SLICE_BYTES", 4096)  # many slices even in the small samples
    for path in traces:
        _assert_same(load_trace(path), parse_trace(read_bytes(path), source=path.name))


TRICKY = [
    runtime('cuda"Launch\\Kernel{[', 10, 5, 1),
    kernel('k},{"ph": "X"}]', 20, 3, 1),
    kernel("\\\\", 30, 1, 2) | {"args": {"nested": [{"a": "]"}, {"b": [1, {"c": "},"}]}], "correlation": 2}},
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": 'stream 7 "traceEvents": ['}},
    kernel("after", 40, 1, 3) | {"name": "\u00e9\u4e2d\\u0022"},
    {},
    kernel("last", 50, 2, 4),
]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1 << 20])
def test_cuts_fall_anywhere_in_strings_escapes_and_nesting(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "SLICE_BYTES", 40)
    header = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "traceEvents": [1, 2]}],
        "note": 'a string with "traceEvents": [ in it',
    }
    data = orjson.dumps({**header, "traceEvents": TRICKY, "distributedInfo": {"rank": 3}, "traceName": "t"})
    whole = parse_trace(data)
    assert whole.meta.rank == 3 and whole.meta.phases["?"] == 1  # the {} in the middle is an event
    _assert_same(_streamed(data, size), whole)
    pretty = orjson.dumps({**header, "traceEvents": TRICKY}, option=orjson.OPT_INDENT_2)
    _assert_same(_streamed(pretty, size), parse_trace(pretty))


@pytest.mark.parametrize("size", [1, 5, 1 << 20])
def test_tensorflows_end_marker_is_dropped_as_the_whole_reader_drops_it(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "SLICE_BYTES", 30)
    events = [kernel("k", i, 1) for i in range(5)]
    marked = encode(events)[:-2] + b",{}]}"
    assert marked.endswith(b"}},{}]}")
    whole = parse_trace(marked)
    assert whole.meta.events_total == 5
    _assert_same(_streamed(marked, size), whole)
    only = b'{"traceEvents": [{}]}'  # no comma before it: an event, as there
    _assert_same(_streamed(only, size), parse_trace(only))


def test_bare_arrays_and_empty_traces_stream() -> None:
    bare = orjson.dumps([kernel("k", 1, 2), {"ph": "M", "name": "process_name"}])
    _assert_same(_streamed(bare, 3), parse_trace(bare))
    for doc in (b'{"traceEvents": []}', b"[]", b' \n{"traceEvents":[ ]}\n'):
        _assert_same(_streamed(doc, 2), parse_trace(doc))


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (b"this is not { json", "not valid JSON"),
        (b'{"schemaVersion": 1, "events": []}', "traceEvents"),
        (b'{"traceEvents": {"ph": "X"}}', "not a list"),
        (b'{"traceEvents": null}', "traceEvents"),
        (b"42", "not a trace document"),
        (b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}', "not valid JSON"),
        (b'{"traceEvents": [{"ph": "X"} {"ph": "X"}]}', "not valid JSON"),
        (b'{"traceEvents": [{"ph": "X"},]}', "not valid JSON"),
        (b'[{"ph": "X"}] trailing', "not valid JSON"),
        (b'{"traceEvents": [], "x": }', "not valid JSON"),
    ],
)
def test_bad_documents_are_format_errors_like_the_whole_readers(doc: bytes, match: str) -> None:
    with pytest.raises(TraceFormatError, match=match):
        parse_trace(doc)
    with pytest.raises(TraceFormatError, match=match):
        _streamed(doc, 4)


def test_a_mistyped_field_costs_that_event_in_its_slice_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "SLICE_BYTES", 8192)
    events = [kernel(f"k{i % 5}", 10 * i, 1, i, bytes=4096) for i in range(5000)]
    events[2500] = events[2500] | {"name": 5}  # refused by the typed decoder
    events[2600] = events[2600] | {"args": {"bytes": "8192"}}  # a number as text: read
    data = encode(events)
    decoded = stream.decode_stream(_pieces(data, 1 << 16), "trace")
    store = build_store(decoded)
    assert decoded.lenient_events == 1
    _assert_same(store, parse_trace(data))
    assert store.meta.skipped == {"malformed event": 1} and store.meta.events_total == 5000


def test_gzip_limits_and_errors_hold_while_streaming(tmp_path: Path) -> None:
    data = encode([kernel("k", i, 1) for i in range(2000)])
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(data) + gzip.compress(b" "))  # two members: valid gzip
    _assert_same(load_trace(gz), parse_trace(data, source="t.json.gz"))
    with pytest.raises(TraceTooLarge, match="limit"):
        load_trace(gz, max_bytes=len(data) // 2)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(data)[:-30])
    with pytest.raises(TraceFormatError, match="truncated"):
        load_trace(cut)


def _generated(events: int) -> Iterator[bytes]:
    """A trace of ``events`` kernels, made piece by piece (never whole in memory)."""
    yield b'{"schemaVersion": 1, "traceEvents": [\n'
    step = 2000
    for start in range(0, events, step):
        part = b",\n".join(
            orjson.dumps(kernel(f"k{i % 7}", 10 * i, 3, i)) for i in range(start, min(events, start + step))
        )
        yield (b",\n" if start else b"") + part
    yield b'\n], "traceName": "generated"}'


def test_the_reader_holds_one_slice_whatever_the_document_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decoded events of each slice are dropped before the next: peak memory of reading
    (not of the columns built from it) is the same for a document 4 times as large."""
    monkeypatch.setattr(stream, "SLICE_BYTES", 1 << 20)

    def peak_reading(events: int) -> tuple[int, int]:
        tracemalloc.start()
        decoded = stream.decode_stream(_generated(events), "generated")
        seen = sum(len(batch) for batch in decoded.batches())
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert decoded.events_total == seen == events and decoded.doc.traceName == "generated"
        return peak, seen

    small, _ = peak_reading(40_000)  # about 6 MB of JSON
    large, _ = peak_reading(160_000)  # about 24 MB
    assert large < small * 1.5, (small, large)
    assert large < 24 << 20  # well under the document (~24 MB): a slice and its events


def test_the_tensorboard_views_read_as_a_stream_equal_the_whole_documents(
    shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from profilerhub_analysis.reader import file_chunks
    from profilerhub_analysis.tbviews import views_and_calls
    from profilerhub_analysis.tbviews.parse import parse_chunks

    monkeypatch.setattr(stream, "SLICE_BYTES", 4096)
    option = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
    for path in sorted(
        p for p in (shared_dir / "traces").rglob("*") if p.name.endswith((".json", ".json.gz"))
    ):
        whole = views_and_calls(read_bytes(path))
        streamed = views_and_calls(parse_chunks(file_chunks(path, size=4096)))
        assert orjson.dumps(streamed, option=option) == orjson.dumps(whole, option=option), path.name
