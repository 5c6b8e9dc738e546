"""The local-directory sink: ``<output>/<job>/<path>``, each file written atomically."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Any

from .base import Sink, SinkError, check_relative_path

# Disk full, quota, I/O error: may clear up (someone frees space), so worth a retry.
_TRANSIENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EAGAIN, errno.EINTR}


class LocalSink(Sink):
    """Writes files under ``root/job`` (a new ``job-<n>`` directory if ``job`` is already used).

    Each file is written to a temporary name and renamed, so a reader (or ``profilerhub upload``)
    never sees half a file.
    """

    kind = "local"

    def __init__(self, root: str | os.PathLike[str], job: str) -> None:
        self.root = Path(root)
        self.job = job
        self.dir = self.root / job

    @property
    def location(self) -> str:
        return str(self.dir.resolve())

    def open(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            n = 1
            while True:
                try:
                    self.dir.mkdir()
                    return
                except FileExistsError:
                    n += 1
                    self.dir = self.root / f"{self.job}-{n}"
        except OSError as exc:
            raise _error(exc, f"cannot create {self.dir}") from exc

    def put(self, path: str, data: bytes) -> None:
        target = self.dir / check_relative_path(path)
        tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise _error(exc, f"cannot write {target}") from exc

    def complete(self, report: dict[str, Any] | None = None) -> None:
        """Nothing to do: the run writes ``_SUCCESS`` itself as its last file."""


def _error(exc: OSError, what: str) -> SinkError:
    return SinkError(f"{what}: {exc.strerror or exc}", retryable=exc.errno in _TRANSIENT_ERRNOS)
