"""File-backed columns (``scratch``): a trace built with its columns spilled to nameless files is
the same store as one built in memory, on every shared sample trace, and its columns are maps of
files, not anonymous memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from profilerhub_analysis import scratch
from profilerhub_analysis.build import load_trace
from profilerhub_analysis.store import EVENT_COLUMNS, EventStore

TRACE_GLOBS = ("*.json", "*.json.gz")


def _sample_traces(shared_dir: Path) -> list[Path]:
    root = shared_dir / "traces"
    return sorted(p for pattern in TRACE_GLOBS for p in root.rglob(pattern))


def _spilled(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EventStore:
    with monkeypatch.context() as patch:
        patch.setattr(scratch, "SPILL_MIN_BYTES", 0)  # every array, however small, goes to a file
        return load_trace(path, scratch_dir=tmp_path)


def test_every_sample_trace_builds_the_same_store_with_its_columns_spilled(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = _sample_traces(shared_dir)
    assert len(traces) >= 16
    for path in traces:
        in_memory = load_trace(path)
        spilled = _spilled(path, tmp_path, monkeypatch)
        assert len(spilled) == len(in_memory), path
        for name, dtype, _ in EVENT_COLUMNS:
            assert spilled.col(name).dtype == np.dtype(dtype), (path, name)
            assert np.array_equal(spilled.col(name), in_memory.col(name)), (path, name)
        assert spilled.name_list == in_memory.name_list, path
        assert spilled.meta == in_memory.meta, path
        for name in ("kind", "pid", "tid", "device", "name", "sort"):
            assert np.array_equal(spilled.lane_column(name), in_memory.lane_column(name)), (path, name)


def test_a_spilled_stores_columns_are_maps_of_files_that_leave_nothing_behind(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shared_dir / "traces" / "torch-cpu" / "mlp_cpu_10steps.pt.trace.json"
    store = _spilled(path, tmp_path, monkeypatch)
    assert len(store) > 0
    for name in ("ts_ns", "dur_ns", "lane_id", "launch", "stream", "device"):
        base = store.col(name)
        while not isinstance(base, np.memmap) and isinstance(base.base, np.ndarray):
            base = base.base
        assert isinstance(base, np.memmap), name
    assert list(tmp_path.iterdir()) == []  # nameless files: nothing to clean up, even after a kill


def test_small_arrays_stay_in_memory_and_large_ones_go_to_a_file(tmp_path: Path) -> None:
    small = scratch.empty(10, np.int64, tmp_path)
    large = scratch.empty(scratch.SPILL_MIN_BYTES // 8, np.int64, tmp_path)
    assert not isinstance(small, np.memmap)
    assert isinstance(large, np.memmap)
    large[:] = 7
    assert int(large[-1]) == 7


def test_take_gathers_in_chunks_what_fancy_indexing_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scratch, "CHUNK", 1000)
    column = np.arange(5000, dtype=np.int64) * 3
    rows = np.random.default_rng(0).permutation(5000)
    assert np.array_equal(scratch.take(column, rows, tmp_path), column[rows])


def test_column_parts_spill_once_past_their_threshold_and_give_back_whole_columns(tmp_path: Path) -> None:
    parts = scratch.ColumnParts(tmp_path, spill_min=64)
    parts.add("a", np.arange(4, dtype=np.int64))
    assert not parts.spilled
    parts.add("a", np.arange(4, 10, dtype=np.int64))  # 80 bytes held: past 64
    assert parts.spilled
    parts.add("b", np.ones(3, dtype=bool))
    assert np.array_equal(parts.column("a", np.int64), np.arange(10))
    assert np.array_equal(parts.column("b", bool), np.ones(3, dtype=bool))
    assert len(parts.column("never added", np.int32)) == 0


def test_the_timeline_index_built_in_small_file_backed_chunks_is_the_one_built_whole(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from profilerhub_analysis.timeline.index import TimelineIndex

    def arrays(index: TimelineIndex) -> dict[str, np.ndarray]:
        parts = {"": index, "longest.": index._longest, "gaps.": index._gaps}
        return {
            prefix + name: value
            for prefix, part in parts.items()
            for name, value in vars(part).items()
            if isinstance(value, np.ndarray)
        }

    for name in ("mlp_cpu_10steps.pt.trace.json", "mlp_cpu_10steps_stack.pt.trace.json.gz"):
        store = load_trace(shared_dir / "traces" / "torch-cpu" / name)
        whole = arrays(TimelineIndex.from_store(store))
        with monkeypatch.context() as patch:
            patch.setattr(scratch, "SPILL_MIN_BYTES", 0)
            patch.setattr(scratch, "CHUNK", 640)  # many chunks, and ten blocks of the range tables each
            chunked = arrays(TimelineIndex.from_store(store))
        assert whole.keys() == chunked.keys()
        assert isinstance(chunked["_ts"], np.memmap)
        for key, value in whole.items():
            assert np.array_equal(chunked[key], value), (name, key)


def test_the_tensorboard_views_are_the_same_with_their_columns_spilled(
    shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import orjson

    from profilerhub_analysis.reader import file_chunks
    from profilerhub_analysis.tbviews import views_and_calls
    from profilerhub_analysis.tbviews.parse import parse_chunks

    path = shared_dir / "traces" / "hta" / "tests" / "data" / "critical_path" / "alexnet"
    (trace,) = path.glob("*.json.gz")
    whole = orjson.dumps(views_and_calls(parse_chunks(file_chunks(trace)))[0])
    with monkeypatch.context() as patch:
        patch.setattr(scratch, "SPILL_MIN_BYTES", 0)
        spilled = orjson.dumps(views_and_calls(parse_chunks(file_chunks(trace)))[0])
    assert len(whole) > 1000
    assert spilled == whole
