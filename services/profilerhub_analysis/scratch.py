"""Scratch columns: large numpy arrays kept in files instead of anonymous memory.

A trace's event columns grow with the trace (about 100 bytes per event while it is built); kept
in anonymous memory they set the peak of a large trace's ingest. Here a large array is a
``numpy.memmap`` over an *unlinked* temporary file (``tempfile.TemporaryFile``): its pages are page
cache, which the kernel writes back and drops under memory pressure (a cgroup's limit included),
so what the array holds counts against the disk, not against the process's unreclaimable memory.
The file has no name from the start, so nothing is left behind however the process ends, and it
is freed with the last array viewing it.

* ``empty(n, dtype)``: a writable array, file-backed when it is at least ``SPILL_MIN_BYTES``;
* ``ColumnParts``: columns appended batch by batch (the reader's batches), in memory until they
  pass ``SPILL_MIN_BYTES`` together, then appended to one file per column; ``column(key)`` gives
  the whole column (a read-only memmap once spilled);
* ``take(column, rows)``: ``column[rows]`` gathered ``CHUNK`` rows at a time into ``empty``, so a
  permutation of a file-backed column never makes a full-length copy in memory;
* ``spill(array)``: a large array just computed moved to a file (the caller drops the original);
  ``full(n, value, dtype)`` an ``empty`` filled;
* ``select(n, test)``: ``np.flatnonzero`` of a mask computed ``CHUNK`` rows at a time;
* ``group(keys, n_keys)``: a stable sort by small integer keys (a counting sort, ``CHUNK`` rows at a
  time), the rows of each key and where each key's rows start: what ``np.argsort(keys,
  kind="stable")`` and a ``bincount`` give, without a full-length sort's memory.

``directory`` (None: the system's temporary directory) says which disk the files go to.

**Resident pages.** A file-backed array's pages still count in the process's RSS while they are
mapped and touched, until the kernel reclaims them (it does under a memory limit; without one it
need not), so a large trace's RSS could pass a budget that its anonymous memory stays under.
``resident_limit(nbytes)`` holds RSS near a bound instead: while the block runs, a thread reads
the process's RSS every ``TRIM_EVERY_S`` and, past ``nbytes``, lets go of every live scratch
mapping's pages (``madvise(MADV_DONTNEED)`` on the shared file mappings: the data stays in the
file and the page cache, the next access maps it again); ``release_pages()`` does it at once.
What it cannot bound is anonymous memory: that is the code's own working set.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

#: Arrays (and a build's parts together) at least this large go to files.
SPILL_MIN_BYTES = 4 << 20
#: Rows a chunked pass handles at once (8 MiB of int64).
CHUNK = 1 << 20
#: How often ``resident_limit``'s thread reads the process's RSS.
TRIM_EVERY_S = 0.01
#: How often, at most, ``resident_limit``'s thread trims the C heap while RSS is past the limit.
HEAP_TRIM_EVERY_S = 0.5
#: File-backed pages resident beyond the process's own (its libraries) worth letting go of.
TRIM_MIN_BYTES = 16 << 20
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_maps: dict[int, weakref.ref[mmap.mmap]] = {}  # every live scratch mapping, by id
_maps_lock = threading.Lock()


def _file(directory: str | Path | None) -> IO[bytes]:
    return tempfile.TemporaryFile(prefix="profilerhub-column-", dir=directory)


def _mapped(f: IO[bytes], dtype: Any, n: int, mode: Literal["r", "r+"]) -> np.ndarray:
    with f:  # the mapping holds its own reference to the (nameless) file
        if not n:  # mmap refuses an empty file
            return np.zeros(0, dtype=dtype)
        out: np.ndarray = np.memmap(f, dtype=dtype, mode=mode, shape=(n,))
    _register(out)
    return out


def _register(array: np.ndarray) -> None:
    mapping = getattr(array, "_mmap", None)
    if not isinstance(mapping, mmap.mmap):
        return
    key = id(mapping)

    def gone(_ref: object, key: int = key) -> None:
        with _maps_lock:
            _maps.pop(key, None)

    with _maps_lock:
        _maps[key] = weakref.ref(mapping, gone)


def release_pages() -> int:
    """Let go of the resident pages of every live scratch mapping (their data stays in the files);
    how many mappings."""
    with _maps_lock:
        live = [m for ref in list(_maps.values()) if (m := ref()) is not None]
    released = 0
    for mapping in live:
        try:
            mapping.madvise(mmap.MADV_DONTNEED)
            released += 1
        except (ValueError, OSError):  # closed meanwhile
            continue
    return released


def _libc_trim() -> Callable[[int], int] | None:
    try:
        import ctypes

        trim: Callable[[int], int] = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to call
        return None
    return trim


_malloc_trim = _libc_trim()


def trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; elsewhere nothing).

    A parse frees millions of small objects and many column-sized buffers, and glibc keeps what it
    freed for reuse: after a 2M-event trace's reader, 66 MiB of the process's 109 MiB anonymous
    memory was such free heap. Called between an ingest's phases, and by ``resident_limit``."""
    if _malloc_trim is not None:
        _malloc_trim(0)


def _resident() -> tuple[int, int]:
    """(RSS, file-backed and shared RSS) of this process in bytes, from ``/proc/self/statm``; zeros
    where there is none."""
    try:
        with open("/proc/self/statm", "rb") as f:
            fields = f.read().split()
    except OSError:
        return 0, 0
    return int(fields[1]) * _PAGE, int(fields[2]) * _PAGE


class _Limits:
    """The limits of the ``resident_limit`` blocks running in this process, and their one thread."""

    def __init__(self) -> None:
        self.active: list[int] = []
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.thread: threading.Thread | None = None
        self.trims = 0

    def _watch(self) -> None:
        _, own_file = _resident()  # the libraries' pages: not ours to let go
        heap_trimmed = 0.0
        with self.lock:
            while self.active:
                limit = sum(self.active)
                self.lock.release()
                try:
                    rss, file_rss = _resident()
                    if rss > limit and file_rss > own_file + TRIM_MIN_BYTES:
                        release_pages()
                        self.trims += 1
                    if rss > limit and time.monotonic() - heap_trimmed > HEAP_TRIM_EVERY_S:
                        trim_heap()
                        heap_trimmed = time.monotonic()
                finally:
                    self.lock.acquire()
                self.wake.wait(TRIM_EVERY_S)
            self.thread = None

    @contextmanager
    def hold(self, nbytes: int) -> Iterator[None]:
        with self.lock:
            self.active.append(nbytes)
            if self.thread is None:
                self.thread = threading.Thread(target=self._watch, name="scratch pages", daemon=True)
                self.thread.start()
        try:
            yield
        finally:
            with self.lock:
                self.active.remove(nbytes)
                self.wake.notify_all()


_limits = _Limits()


def resident_limit(nbytes: int) -> Any:
    """A context manager: while it runs, scratch mappings' pages are let go whenever the process's
    RSS passes ``nbytes`` (blocks running at once in several threads: the sum of theirs)."""
    return _limits.hold(nbytes)


def empty(n: int, dtype: Any, directory: str | Path | None = None) -> np.ndarray:
    """An uninitialised 1-D array of ``n`` ``dtype`` items: file-backed (writable memmap on a
    nameless temporary file) from ``SPILL_MIN_BYTES`` up, in memory below."""
    dt = np.dtype(dtype)
    if n * dt.itemsize < SPILL_MIN_BYTES:
        return np.empty(n, dtype=dt)
    f = _file(directory)
    f.truncate(n * dt.itemsize)
    return _mapped(f, dt, n, "r+")


def full(n: int, value: Any, dtype: Any, directory: str | Path | None = None) -> np.ndarray:
    """``np.full(n, value, dtype)`` into ``empty`` (file-backed when large)."""
    out = empty(n, dtype, directory)
    out[:] = value
    return out


def spill(array: np.ndarray, directory: str | Path | None = None) -> np.ndarray:
    """``array`` itself when small, else a file-backed copy of it: the caller drops ``array``, and
    its anonymous memory goes with it."""
    if array.nbytes < SPILL_MIN_BYTES or isinstance(array, np.memmap):
        return array
    out = empty(len(array), array.dtype, directory)
    out[:] = array
    return out


def select(n: int, test: Callable[[int, int], np.ndarray], dtype: Any = np.int64,
           directory: str | Path | None = None) -> np.ndarray:  # fmt: skip
    """``np.flatnonzero(mask)`` (as ``dtype``) of a mask over ``n`` rows that ``test(start, stop)``
    computes ``CHUNK`` rows at a time: memory held beyond the result is one chunk's."""
    parts = ColumnParts(directory)
    for start in range(0, n, CHUNK):
        parts.add("rows", (np.flatnonzero(test(start, min(n, start + CHUNK))) + start).astype(dtype))
    out = parts.column("rows", dtype)
    parts.close()
    return out


def group(
    keys: np.ndarray, n_keys: int, values: np.ndarray | None = None, directory: str | Path | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(``values`` in the stable order of ``keys``, ``starts``): ``values[np.argsort(keys,
    kind="stable")]`` (``values`` default: the row numbers, as ``int32``) and the ``n_keys + 1``
    offsets of each key's rows (``np.cumsum`` of ``np.bincount(keys, minlength=n_keys)`` after a
    0). ``keys`` are integers in ``[0, n_keys)``; a counting sort, ``CHUNK`` rows at a time, into
    ``empty`` (file-backed when large)."""
    n = len(keys)
    starts = full(n_keys + 1, 0, np.int64, directory)
    for a in range(0, n, CHUNK):
        np.add.at(starts, keys[a : a + CHUNK] + 1, 1)
    carry = 0
    for a in range(0, n_keys + 1, CHUNK):  # the running sum, one chunk at a time
        part = starts[a : a + CHUNK]
        np.cumsum(part, out=part)
        part += carry
        carry = int(part[-1])
    out = empty(n, np.int32 if values is None else values.dtype, directory)
    at = empty(n_keys, np.int64, directory)  # where each key's next row goes
    at[:] = starts[:-1]
    for a in range(0, n, CHUNK):
        k = keys[a : a + CHUNK]
        by_key = np.argsort(k, kind="stable")
        sorted_keys = k[by_key]
        first = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
        sizes = np.diff(np.r_[first, len(k)])
        rank = np.arange(len(k)) - np.repeat(first, sizes)
        rows = by_key + a
        out[at[sorted_keys] + rank] = rows if values is None else values[rows]
        at[sorted_keys[first]] += sizes
    return out, starts


def take(column: np.ndarray, rows: np.ndarray, directory: str | Path | None = None) -> np.ndarray:
    """``column[rows]`` (``rows``: integer positions), built ``CHUNK`` rows at a time into
    ``empty``: memory held beyond the result is one chunk."""
    out = empty(len(rows), column.dtype, directory)
    for start in range(0, len(rows), CHUNK):
        stop = start + CHUNK
        np.take(column, rows[start:stop], out=out[start:stop])
    return out


def concatenate(parts: list[np.ndarray], dtype: Any, directory: str | Path | None = None) -> np.ndarray:
    """``np.concatenate(parts)`` into ``empty`` (file-backed when large)."""
    out = empty(sum(len(p) for p in parts), dtype, directory)
    at = 0
    for part in parts:
        out[at : at + len(part)] = part
        at += len(part)
    return out


class ColumnParts:
    """Columns built part by part; in memory while small, then one append-only file per column."""

    def __init__(self, directory: str | Path | None = None, spill_min: int | None = None) -> None:
        self.directory = directory
        self.spill_min = SPILL_MIN_BYTES if spill_min is None else spill_min
        self._parts: dict[str, list[np.ndarray]] = {}
        self._files: dict[str, tuple[IO[bytes], np.dtype[Any], int]] | None = None
        self._columns: dict[str, np.ndarray] = {}
        self._held = 0

    @property
    def spilled(self) -> bool:
        """Whether the parts went to files."""
        return self._files is not None

    def add(self, key: str, part: np.ndarray) -> None:
        """Append ``part`` to column ``key`` (every part of a column has the column's dtype)."""
        if self._files is not None:
            self._append(key, part)
            return
        self._parts.setdefault(key, []).append(part)
        self._held += part.nbytes
        if self._held >= self.spill_min:
            self._files = {}
            for name, parts in self._parts.items():
                for held in parts:
                    self._append(name, held)
            self._parts = {}

    def _append(self, key: str, part: np.ndarray) -> None:
        assert self._files is not None
        if key not in self._files:
            self._files[key] = (_file(self.directory), part.dtype, 0)
        f, dtype, n = self._files[key]
        f.write(np.ascontiguousarray(part, dtype=dtype).data)
        self._files[key] = (f, dtype, n + len(part))

    def column(self, key: str, dtype: Any) -> np.ndarray:
        """The whole column ``key`` (empty when never added); read-only and file-backed once spilled,
        when no more parts may be added to it."""
        if self._files is None:
            parts = self._parts.get(key)
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
        if key not in self._columns:
            if key not in self._files:
                return np.zeros(0, dtype=dtype)
            f, stored, n = self._files.pop(key)
            f.flush()
            self._columns[key] = _mapped(f, stored, n, "r")
        return self._columns[key]

    def close(self) -> None:
        """Drop every column (what was mapped stays alive in the arrays handed out)."""
        for f, _, _ in (self._files or {}).values():
            f.close()
        self._files = {} if self._files is not None else None
        self._parts, self._columns = {}, {}


__all__ = [
    "CHUNK",
    "SPILL_MIN_BYTES",
    "ColumnParts",
    "concatenate",
    "empty",
    "full",
    "group",
    "release_pages",
    "resident_limit",
    "select",
    "spill",
    "take",
    "trim_heap",
]
