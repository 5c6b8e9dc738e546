"""The spill: files a run could not deliver, kept on local disk and delivered later.

When the hub (or S3) is down, the token is wrong, the upload queue is full or ``finish`` runs out
of time, the uploader hands the file here instead of dropping it. Each run that spills gets one
entry under the spill root (``PROFILERHUB_SPILL_DIR``, default ``~/.cache/profilerhub/spill``)::

    <root>/<job>-<UTC time>-<host>-<pid>/
        .spill.json      how to deliver it: sink kind and location, job name, metric definitions,
                         rules, the hub job when one was registered, what was lost for good
        .lock            flock'd by the run writing the entry and by whoever delivers it
        job.json, system/000001.jsonl.gz, ..., _SUCCESS      the files, in the job's raw layout

An entry is made under a dot-name and renamed once locked and described, so a delivery never sees
half an entry. Delivery (``deliver_spills``: the next ``ph.init`` in the background, and
``profilerhub upload --spilled``) takes the entry's lock without waiting (a locked entry is being
written or delivered: skipped, so nothing is delivered twice), sends the files to the job the run
registered (or registers one from ``.spill.json``), completes it, and removes the entry.

Bounds: the whole root holds at most ``max_bytes`` (``PROFILERHUB_SPILL_MAX_BYTES``, default
2 GiB; 0 turns spilling off), and a file is never spilled when it would leave less than
``RESERVE_BYTES`` free on the disk. A file that does not fit is dropped and counted as lost;
entries already there are never evicted to make room (they are someone's data). Several processes
spilling at once check the cap each against its own count, so it can be passed by at most one
file per process.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ._log import log_once, logger

META = ".spill.json"
LOCK = ".lock"
DEFAULT_MAX_BYTES = 2 << 30
#: Never spill a file that would leave less than this free on the spill root's disk.
RESERVE_BYTES = 256 << 20


def default_root() -> Path:
    """``$XDG_CACHE_HOME/profilerhub/spill``, else ``~/.cache/profilerhub/spill``."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "profilerhub" / "spill"


def spill_root(value: str | os.PathLike[str] | None = None) -> Path:
    """The spill root: ``value``, else ``$PROFILERHUB_SPILL_DIR``, else ``default_root()``."""
    chosen = value or os.environ.get("PROFILERHUB_SPILL_DIR") or None
    return Path(chosen).expanduser() if chosen else default_root()


def upload_command(root: Path, hub_url: str | None) -> str:
    """The exact command that delivers what is spilled under ``root``."""
    parts = ["profilerhub", "upload", "--spilled"]
    if root != default_root():
        parts += ["--spill-dir", str(root)]
    if hub_url:
        parts += ["--hub", hub_url]
    return " ".join(parts)


def _try_lock(path: Path) -> int | None:
    """An fd holding an exclusive flock on ``path``, or None when someone else holds it."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


class Spill:
    """One run's spill entry, made on the first ``put``; ``meta`` is what ``.spill.json`` starts with.

    ``put`` is called from the uploader and the collector threads; it never raises.
    """

    def __init__(self, root: Path, max_bytes: int, meta: dict[str, Any]) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.meta = dict(meta)
        self.dir: Path | None = None
        self._lock_fd: int | None = None
        self._used: int | None = None  # bytes under the root, counted once then kept up to date
        self._sizes: dict[str, int] = {}  # bytes of each file in this entry
        self._failed = False
        self._mutex = threading.Lock()

    def put(self, path: str, data: bytes) -> bool:
        """Keep ``data`` as the entry's file ``path``; False when it does not fit or cannot be written."""
        if self.max_bytes <= 0 or self._failed:
            return False
        with self._mutex:
            try:
                if self.dir is None:
                    self._make_entry()
                assert self.dir is not None
                if self._used is None:
                    self._used = _tree_bytes(self.root)
                old = self._sizes.get(path, 0)
                if self._used - old + len(data) > self.max_bytes:
                    log_once(
                        "spill-full",
                        logging.WARNING,
                        "profilerhub: the spill folder %s is at its cap of %d MiB "
                        "(PROFILERHUB_SPILL_MAX_BYTES); further undelivered files are lost and counted",
                        self.root,
                        self.max_bytes >> 20,
                    )
                    return False
                if shutil.disk_usage(self.root).free - len(data) < RESERVE_BYTES:
                    log_once(
                        "spill-disk",
                        logging.WARNING,
                        "profilerhub: less than %d MiB would be left free on %s; not spilling there, "
                        "further undelivered files are lost and counted",
                        RESERVE_BYTES >> 20,
                        self.root,
                    )
                    return False
                from .sinks.base import check_relative_path

                _write_atomic(self.dir / check_relative_path(path), data)
                self._used += len(data) - old
                self._sizes[path] = len(data)
                return True
            except Exception as exc:  # OSError, SinkError on an unsafe path: never into the caller
                if isinstance(exc, OSError) and exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                    self._failed = True  # an unwritable spill folder stays unwritable for this run
                log_once(
                    "spill-error", logging.WARNING, "profilerhub: cannot spill to %s (%s)", self.root, exc
                )
                return False

    def ensure(self) -> None:
        """Make the entry now, with no file in it (a job to complete later)."""
        with self._mutex:
            if self.dir is None and not self._failed:
                try:
                    self._make_entry()
                except OSError as exc:
                    self._failed = True
                    log_once(
                        "spill-error", logging.WARNING, "profilerhub: cannot spill to %s (%s)", self.root, exc
                    )

    def update(self, **fields: Any) -> None:
        """Record ``fields`` in ``.spill.json`` (written only once the entry exists)."""
        with self._mutex:
            self.meta.update(fields)
            if self.dir is not None:
                with contextlib.suppress(OSError):
                    _write_atomic(self.dir / META, json.dumps(self.meta, indent=1).encode())

    def close(self) -> None:
        """Let deliveries take the entry (releases the lock)."""
        with self._mutex:
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    def _make_entry(self) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        name = f"{self.meta.get('job', 'job')}-{stamp}-{socket.gethostname()}-{os.getpid()}"
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        staging = self.root / f".new-{name}"
        staging.mkdir(mode=0o700)
        fd = _try_lock(staging / LOCK)
        assert fd is not None, "nobody else knows the staging name"
        self._lock_fd = fd
        self.meta.setdefault("host", socket.gethostname())
        self.meta.setdefault("created", time.time())
        _write_atomic(staging / META, json.dumps(self.meta, indent=1).encode())
        final = self.root / name
        os.rename(staging, final)
        self.dir = final
        self.meta["dir"] = str(final)


# -- delivery -------------------------------------------------------------------------------


def entries(root: Path) -> list[Path]:
    """The spill entries under ``root``, oldest first (staging ``.new-*`` folders left out)."""
    try:
        found = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except OSError:
        return []
    return sorted((p for p in found if (p / META).is_file()), key=lambda p: (p.stat().st_mtime, p.name))


def read_meta(entry: Path) -> dict[str, Any]:
    meta = json.loads((entry / META).read_text())
    if not isinstance(meta, dict) or not isinstance(meta.get("job"), str):
        raise ValueError(f"{entry / META} is not a spill description")
    return meta


@contextlib.contextmanager
def locked(entry: Path) -> Iterator[bool]:
    """Hold ``entry``'s lock for the block; yields False (and holds nothing) when it is taken."""
    fd = None
    with contextlib.suppress(OSError):
        fd = _try_lock(entry / LOCK)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)


#: ``deliver(entry, meta)`` sends one locked entry; raises to leave it for next time.
Deliver = Callable[[Path, dict[str, Any]], Any]


def deliver_spills(
    root: Path,
    deliver: Deliver,
    wanted: Callable[[dict[str, Any]], bool] = lambda meta: True,
    only: Path | None = None,
) -> dict[str, list[Any]]:
    """Deliver every entry under ``root`` (or just ``only``) that ``wanted(meta)`` accepts, oldest
    first.

    Returns ``{"delivered": [(entry, result)], "failed": [(entry, error)], "busy": [entry]}``;
    a delivered entry is removed, a failed one is kept for next time.
    """
    out: dict[str, list[Any]] = {"delivered": [], "failed": [], "busy": []}
    for entry in [only] if only is not None else entries(root):
        with locked(entry) as mine:
            if not mine:
                out["busy"].append(entry)
                continue
            try:
                meta = read_meta(entry)
            except (OSError, ValueError) as exc:
                if not entry.exists():
                    continue  # delivered by someone else between listing and locking
                out["failed"].append((entry, exc))
                continue
            if not wanted(meta):
                continue
            try:
                result = deliver(entry, meta)
            except Exception as exc:
                out["failed"].append((entry, exc))
                continue
            shutil.rmtree(entry, ignore_errors=True)
            out["delivered"].append((entry, result))
    return out


def log_delivery(outcome: dict[str, list[Any]], root: Path) -> None:
    """One line per delivered entry, one warning for what is left."""
    for entry, result in outcome["delivered"]:
        logger.info("profilerhub: delivered spilled run %s to %s", entry.name, result)
    if outcome["failed"]:
        entry, exc = outcome["failed"][0]
        logger.warning(
            "profilerhub: %d spilled run(s) in %s could not be delivered yet (%s: %s); kept for later",
            len(outcome["failed"]),
            root,
            entry.name,
            getattr(exc, "message", exc),
        )


__all__ = [
    "DEFAULT_MAX_BYTES",
    "RESERVE_BYTES",
    "Spill",
    "default_root",
    "deliver_spills",
    "entries",
    "locked",
    "log_delivery",
    "read_meta",
    "spill_root",
    "upload_command",
]
