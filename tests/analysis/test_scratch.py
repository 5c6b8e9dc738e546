"""File-backed columns (``scratch``): a trace built with its columns spilled to nameless files is
the same store as one built in memory, on every shared sample trace, and its columns are maps of
files, not anonymous memory."""

from __future__ import annotations

import json
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


def test_the_tensorboard_trees_views_and_calls_are_the_same_built_a_few_rows_at_a_time_into_files(
    shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tbviews.tree.build``, the calls and the role ranges run a chunk of rows at a time into
    ``scratch`` arrays: with chunks of 97 rows and every array in a file, every sample trace
    (kernels, several threads, modules) gives the same views and calls as one chunk in memory."""
    from profilerhub_analysis.reader import file_chunks
    from profilerhub_analysis.tbviews import tree, views_and_calls
    from profilerhub_analysis.tbviews.parse import parse_chunks

    traces = _sample_traces(shared_dir)
    many_threads = 0
    for path in traces:
        whole, whole_calls = views_and_calls(parse_chunks(file_chunks(path)))
        with monkeypatch.context() as patch:
            patch.setattr(scratch, "SPILL_MIN_BYTES", 0)
            patch.setattr(scratch, "CHUNK", 97)
            trace = parse_chunks(file_chunks(path))
            forest = tree.build(trace)
            cut, cut_calls = views_and_calls(trace)
        many_threads += len(forest.root_tids) > 1
        for name in ("parent", "order", "preorder", "children", "host_self", "device_total", "tc_eligible"):
            column = getattr(forest, name)
            assert isinstance(column, np.memmap) or not len(column), (path, name)
        assert json.dumps(cut, sort_keys=True) == json.dumps(whole, sort_keys=True), path
        assert cut_calls.keys() == whole_calls.keys()
        for key, col in whole_calls.items():
            same = (cut_calls[key] == col) if isinstance(col, list) else np.array_equal(cut_calls[key], col)
            assert same, (path, key)
    assert many_threads >= 3


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_group_is_a_stable_sort_by_small_keys_and_select_a_chunked_flatnonzero(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 9, size=1000).astype(np.int32)
    values = rng.integers(0, 1 << 30, size=1000).astype(np.int64)
    monkeypatch.setattr(scratch, "CHUNK", chunk)
    monkeypatch.setattr(scratch, "SPILL_MIN_BYTES", 0)
    rows, starts = scratch.group(keys, 12)
    assert np.array_equal(rows, np.argsort(keys, kind="stable"))
    assert np.array_equal(starts, np.r_[0, np.cumsum(np.bincount(keys, minlength=12))])
    moved, _ = scratch.group(keys, 12, values)
    assert np.array_equal(moved, values[np.argsort(keys, kind="stable")])
    picked = scratch.select(len(keys), lambda a, b: keys[a:b] % 3 == 1, np.int32)
    assert picked.dtype == np.int32
    assert np.array_equal(picked, np.flatnonzero(keys % 3 == 1))
    spilled = scratch.spill(values)
    assert isinstance(spilled, np.memmap) and np.array_equal(spilled, values)


def _file_rss() -> int:
    """This process's file-backed and shared RSS, bytes (``/proc/self/statm``'s third field)."""
    return scratch._resident()[1]


def test_released_pages_leave_rss_and_come_back_with_their_data(tmp_path: Path) -> None:
    n = 32 << 20  # 256 MiB of int64
    column = scratch.empty(n, np.int64, tmp_path)
    assert isinstance(column, np.memmap)
    column[:] = 7
    resident = _file_rss()
    assert scratch.release_pages() >= 1
    assert _file_rss() < resident - (200 << 20), (resident, _file_rss())  # its pages left RSS
    assert int(column[n - 1]) == 7 and int(column[: 1 << 20].sum()) == 7 << 20  # its data did not


def test_a_resident_limit_lets_go_of_scratch_pages_past_it_until_the_block_ends(tmp_path: Path) -> None:
    from tests.support.hub import wait_for

    n = 32 << 20
    column = scratch.empty(n, np.int64, tmp_path)
    before = _file_rss()
    with scratch.resident_limit(1):  # past any RSS: every check lets go of what it finds resident
        column[:] = 3
        wait_for(lambda: _file_rss() < before + (64 << 20), "the written column's pages let go")
    wait_for(lambda: scratch._limits.thread is None, "the pages' thread gone with the last limit")
    assert int(column[::4096].sum()) == 3 * len(column[::4096])
