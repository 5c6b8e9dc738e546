"""``profilerhub._native``: the C reductions are compiled once per machine into the user's cache,
reused after, and where they cannot be built ``ph.watch`` keeps torch's path with the same rows."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from profilerhub import _native, _reduce
from profilerhub.debug import create_trial
from tests.support.watchtrain import ALL, assert_trial_matches

from .test_watch import _run


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty cache of the native build and nothing loaded yet."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PROFILERHUB_NATIVE_CACHE", str(cache))
    monkeypatch.delenv("PROFILERHUB_NATIVE", raising=False)
    monkeypatch.setattr(_native, "_loaded", [])
    return cache


def test_the_library_is_compiled_once_into_the_cache_and_reused(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _native.lib() is not None
    built = sorted(p.name for p in fresh.iterdir())
    assert len(built) == 1 and built[0].startswith("native_reduce-") and built[0].endswith(".so")

    def no_compiler(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("compiled again although the cache holds the library")

    monkeypatch.setattr(subprocess, "run", no_compiler)
    monkeypatch.setattr(_native, "_loaded", [])
    assert _native.lib() is not None
    assert sorted(p.name for p in fresh.iterdir()) == built  # no temporary file left behind


@pytest.mark.parametrize("cc", ["/nonexistent/cc", "false"])
def test_without_a_working_compiler_watch_keeps_torchs_path(
    torch: ModuleType,
    fresh: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    cc: str,
) -> None:
    """No compiler, or one that fails: ``lib()`` is None, said in the log, nothing half-written is
    left in the cache, and a watched run still records torch's own statistics."""
    monkeypatch.setenv("CC", cc)
    with caplog.at_level(logging.INFO, logger="profilerhub"):
        assert _native.lib() is None
    said = " ".join(r.getMessage() for r in caplog.records)
    assert ("no C compiler" in said) if cc.startswith("/") else ("compiling _native_reduce.c failed" in said)
    assert not fresh.exists() or not list(fresh.iterdir())
    rec = _run(torch, tmp_path, collections=ALL, every=1)
    assert assert_trial_matches(torch, create_trial(str(tmp_path / "watched")), rec) > 100


def test_profilerhub_native_0_switches_it_off(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILERHUB_NATIVE", "0")
    assert _native.lib() is None
    assert not fresh.exists()


def test_the_native_rows_are_whole_rows_in_the_tables_layout(torch: ModuleType, fresh: Path) -> None:
    """One call reduces many tensors into ``ROW``-wide rows (statistics then the coarse bins),
    the counts of each row adding up to its finite elements."""
    tensors = [torch.randn(n) for n in (1, 511, 512, 513, 70_000)] + [torch.zeros(5)]
    rows = _reduce.reduce_rows(torch, tensors)
    assert rows.shape == (len(tensors), _reduce.ROW)
    for t, row in zip(tensors, rows.tolist(), strict=True):
        assert row[_reduce.NUMEL] == t.numel()
        assert sum(row[len(_reduce.STATS) :]) == t.numel()
    assert rows[-1, _reduce.ZEROS].item() == 1.0 and rows[-1, len(_reduce.STATS)].item() == 5
