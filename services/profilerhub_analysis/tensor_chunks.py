"""A ``TensorTable`` grown from the SDK's ``tensors/*.jsonl.gz`` chunks as they arrive.

The SDK never rewrites a chunk, so each is read once: ``ChunkedTable.update(names, read)`` reads
the chunks of ``names`` it has not read yet (``read(name) -> bytes``, the caller's I/O) and merges
their rows. Used by the live rules (worker), the tensors APIs of the hub and the app for a job
still running, and the trial (``profilerhub.debug``) over a local folder or S3. A chunk that cannot
be read is skipped and counted (``skipped``), never fatal.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from profilerhub_analysis.tensor_records import records_of_chunk
from profilerhub_analysis.tensors import TensorTable

CHUNK = re.compile(r"(?:^|/)tensors/\d{6}\.jsonl\.gz$")
"""The name of a reductions chunk (a raw key or a path ending so)."""


@dataclass(frozen=True)
class FullTensor:
    """A tensor saved whole (``ph.watch(full_tensors=…)``): its ``.npy`` is at ``path``, relative
    to the run's raw folder (the chunk's folder's parent)."""

    name: str
    mode: str
    rank: int
    step: int
    path: str
    run: str  # the name of the chunk that listed it, up to ``tensors/``: "" for a single run


class ChunkedTable:
    """The rows of every chunk read so far; thread-safe."""

    def __init__(self, table: TensorTable | None = None, read: Iterable[str] = ()) -> None:
        self.table = table if table is not None else TensorTable.empty()
        self.read: set[str] = set(read)
        self.full: list[FullTensor] = []
        self.skipped = 0
        self._lock = threading.Lock()

    def update(self, names: Iterable[str], read: Callable[[str], bytes]) -> TensorTable:
        """Read the chunks among ``names`` not read before (in name order) and merge them."""
        with self._lock:
            fresh = sorted(n for n in names if CHUNK.search(n) and n not in self.read)
            for name in fresh:
                self.read.add(name)
                try:
                    self._add(name, records_of_chunk(read(name)))
                except (ValueError, OSError, KeyError, TypeError, IndexError):  # bad or gone: skip it
                    self.skipped += 1
            return self.table

    def _add(self, name: str, lines: list[dict[str, Any]]) -> None:
        run = name[: name.rfind("tensors/")].rstrip("/")
        records = []
        for rec in lines:
            if rec.get("kind") == "full":
                self.full.append(
                    FullTensor(
                        str(rec["name"]),
                        str(rec["mode"]),
                        int(rec["rank"]),
                        int(rec["step"]),
                        str(rec["path"]),
                        run,
                    )
                )
            else:
                records.append(rec)
        if records:
            self.table = self.table.merge(TensorTable.from_records(records))


__all__ = ["CHUNK", "ChunkedTable", "FullTensor"]
