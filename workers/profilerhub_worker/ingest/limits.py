"""What bounds an ingest's memory, whatever the input.

The limits are settings (``docs/jobs.md`` lists them with their defaults):

* per file: ``job_max_file_bytes`` stored (compressed), and once decompressed
  ``job_max_trace_bytes`` (an operator's cap; off by default: the disk bounds it, not memory).
  Raw files are inflated *to a temporary file* in small chunks, counting as they go, so a gzip
  bomb (6 MB inflating to 6 GiB) is stopped having held one chunk in memory, and its file is left
  out at once with a reason naming it: by ``job_max_inflate_ratio`` (on by default: more than 200
  times the compressed bytes read so far, past the first ``RATIO_FREE_BYTES``) whether or not a
  cap is set, by the cap, or when the disk is nearly full (``DISK_RESERVE_BYTES``).
* per job: ``job_max_ingest_bytes``, the decompressed size of all the job's files together (off
  by default too).
* per worker: ``worker_ingest_memory_bytes``, shared by the ingests a worker runs at once
  (``--pool threads``: one process). Before a file is parsed its ingest reserves
  ``PARSE_MEMORY_FACTOR`` times its decompressed size from this budget, at most
  ``job_ingest_trace_memory_bytes`` (one trace's budget, ``memory``: what one trace's ingest is held
  to whatever its size), and waits while others hold it; a reservation larger than the whole budget
  (a trace budget set above the worker's) fails its job instead of waiting.
  (The factor is measured by ``benchmarks/bench_ingest_memory.py``: one trace's whole ingest,
  reader, dashboard, timeline and TensorBoard views, peaked at 1.20, 1.07 and 0.99 times the
  decompressed size at 1, 4 and 10 M events, the worker's interpreter included; 1.5 leaves a margin.)

Temporary copies live in ``profilerhub-ingest-<pid>-*`` directories; ``remove_stale_copies``
(run when a worker's ingest context is built) deletes those of processes that are gone, so a
worker killed mid-ingest leaks nothing past its restart.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from profilerhub_core.storage import ObjectStore

PARSE_MEMORY_FACTOR = 1.5
# A parse holds the GIL for seconds at a time (msgspec decodes a whole document, or a whole batch,
# in one call), so the heartbeat thread cannot run meanwhile; a large file's claim is kept live for
# as long as its parse could take at this rate instead (``claim.Heartbeat.parsing``). Measured on a
# loaded 2-core machine (benchmarks/bench_ingest_gil_hold.py): 250 MiB parsed at 22-32 MiB/s, the
# GIL held 2.3-4.2 s in one stretch; this floor leaves a margin of about 3 below the slowest.
SLOWEST_PARSE_BYTES_PER_SECOND = 8 << 20
COPY_PREFIX = "profilerhub-ingest-"
#: No limit (a size cap set to 0 is off).
NO_LIMIT = 1 << 62
#: What any file may inflate to before its ratio is judged (small files compress very well).
RATIO_FREE_BYTES = 64 << 20
#: Free space an inflating copy leaves on its disk, checked every ``DISK_CHECK_BYTES`` written.
DISK_RESERVE_BYTES = 256 << 20
DISK_CHECK_BYTES = 64 << 20
_CHUNK = 1 << 20


class OverLimit(ValueError):
    """A file passes a size limit; the message says which and how to raise it."""


#: Where a cgroup's memory limit is read (v2, then v1), the limit of the container the worker runs in.
CGROUP_MEMORY_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)


def cgroup_memory_limit(files: tuple[Path, ...] = CGROUP_MEMORY_LIMITS) -> int | None:
    """The memory limit of this process's cgroup in bytes (a container's ``resources.limits``), or
    None where there is none (``max``, v1's "unlimited" near 2**63, no file)."""
    for path in files:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            return int(text)
        return None
    return None


def default_memory_budget(files: tuple[Path, ...] = CGROUP_MEMORY_LIMITS) -> int:
    """What a worker's concurrent ingests may hold by default: half its memory, the smaller of the
    machine's and its cgroup's limit (in a pod psutil sees the node's memory, not the pod's)."""
    import psutil

    total = int(psutil.virtual_memory().total)
    limit = cgroup_memory_limit(files)
    return (min(total, limit) if limit else total) // 2


class MemoryBudget:
    """Bytes the ingests of one worker process may hold at once (a counting semaphore of bytes)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._cond = threading.Condition()

    @contextmanager
    def reserve(self, nbytes: int, what: str) -> Iterator[None]:
        """Hold ``nbytes`` while the block runs, waiting for others to release; ``OverLimit`` when
        ``nbytes`` is more than the whole budget (waiting would never end)."""
        if nbytes > self.total:
            raise OverLimit(
                f"{what}: parsing it needs about {nbytes / 2**20:.0f} MiB, more than this worker's "
                f"ingest memory of {self.total / 2**20:.0f} MiB (PROFILERHUB_WORKER_INGEST_MEMORY_BYTES; "
                "one trace's budget, PROFILERHUB_JOB_INGEST_TRACE_MEMORY_BYTES, should be under it)"
            )
        with self._cond:
            self._cond.wait_for(lambda: self.used + nbytes <= self.total)
            self.used += nbytes
        try:
            yield
        finally:
            with self._cond:
                self.used -= nbytes
                self._cond.notify_all()


def inflate_limit(stored: int, cap: int, ratio: float) -> int:
    """The most a file of ``stored`` bytes may inflate to: ``cap``, and (``ratio`` > 0) no more
    than ``ratio`` times ``stored`` past the first ``RATIO_FREE_BYTES``."""
    if ratio <= 0:
        return cap
    return min(cap, max(RATIO_FREE_BYTES, int(stored * ratio)))


def inflate_to_file(
    store: ObjectStore, key: str, target: Path, limit: int, what: str, ratio: float = 0.0
) -> int:
    """Copy the object at ``key`` to ``target``, decompressing gzip (by its magic bytes) on the way.

    Stops with ``OverLimit`` as soon as more than ``limit`` bytes came out; as soon as, past the
    first ``RATIO_FREE_BYTES``, more than ``ratio`` (> 0) times the compressed bytes read so far
    came out (a decompression bomb, however large ``limit`` is); and when the disk ``target`` is
    on has less than ``DISK_RESERVE_BYTES`` left. ``ValueError`` for a broken or truncated gzip
    stream. Memory held: one chunk in, at most one chunk out.
    """
    written = consumed = 0
    checked_disk = 0
    inflater: zlib._Decompress | None = None
    first = True
    with target.open("wb") as out:

        def emit(data: bytes) -> None:
            nonlocal written, checked_disk
            written += len(data)
            if written > limit:
                raise OverLimit(f"{what}: larger than the {limit / 2**20:.0f} MiB limit once decompressed")
            if ratio > 0 and written > RATIO_FREE_BYTES and written > ratio * consumed:
                raise OverLimit(
                    f"{what}: inflates to more than {ratio:g} times its compressed size, a decompression "
                    "bomb (PROFILERHUB_JOB_MAX_INFLATE_RATIO)"
                )
            if written - checked_disk >= DISK_CHECK_BYTES:
                checked_disk = written
                free = shutil.disk_usage(target.parent).free
                if free < DISK_RESERVE_BYTES:
                    raise OverLimit(
                        f"{what}: the worker's disk is full ({free / 2**20:.0f} MiB left after "
                        f"{written / 2**20:.0f} MiB decompressed); ingest it again once there is room"
                    )
            out.write(data)

        for chunk in store.stream(key, _CHUNK):
            consumed += len(chunk)
            if first:
                first = False
                if chunk[:2] == b"\x1f\x8b":
                    inflater = zlib.decompressobj(wbits=31)
            if inflater is None:
                emit(chunk)
                continue
            try:
                while chunk:
                    emit(inflater.decompress(chunk, _CHUNK))
                    chunk = inflater.unconsumed_tail
                    if inflater.eof and inflater.unused_data:  # another gzip member follows
                        chunk = inflater.unused_data + chunk
                        inflater = zlib.decompressobj(wbits=31)
            except zlib.error as exc:
                raise ValueError(f"not a valid gzip file ({exc})") from exc
        if inflater is not None and not inflater.eof:
            raise ValueError("gzip data is truncated (the file ended early)")
    return written


def copy_dir() -> tempfile.TemporaryDirectory[str]:
    """A private temporary directory for one ingest, named for this process."""
    return tempfile.TemporaryDirectory(prefix=f"{COPY_PREFIX}{os.getpid()}-")


def remove_stale_copies(root: str | None = None) -> int:
    """Delete the temporary directories of ingests whose process is gone; how many."""
    base = Path(root or tempfile.gettempdir())
    removed = 0
    for entry in base.glob(f"{COPY_PREFIX}*"):
        pid_text = entry.name.removeprefix(COPY_PREFIX).split("-", 1)[0]
        if pid_text.isdigit() and _alive(int(pid_text)):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = [
    "CGROUP_MEMORY_LIMITS",
    "COPY_PREFIX",
    "NO_LIMIT",
    "PARSE_MEMORY_FACTOR",
    "SLOWEST_PARSE_BYTES_PER_SECOND",
    "MemoryBudget",
    "OverLimit",
    "cgroup_memory_limit",
    "copy_dir",
    "default_memory_budget",
    "inflate_limit",
    "inflate_to_file",
    "remove_stale_copies",
]
