"""TensorBoard event files from a run: ``ph.log_metric(..., tensorboard=True)`` scalars and a
``tensorboard_dir`` that the script's own writer fills, both delivered as raw files of the job.

Where they land in the job (and so in the owner's TensorBoard app, which names a run by its
folder under the owner's ``jobs/``)::

    tensorboard/events.out.tfevents.<start s>.<host>.<pid>.<seq>
        the SDK's scalars; TensorBoard's run <job_id>/raw/tensorboard
    tensorboard/logdir/<path in tensorboard_dir>
        a copy of tensorboard_dir; runs <job_id>/raw/tensorboard/logdir[/<sub>]

The SDK's scalars go out as one new event file per chunk (every ``chunk_interval_s`` when there
are any): a stored file is never rewritten, and TensorBoard reads a folder's event files in name
order, moving on to the next once one exists, so names that sort in write order (a zero-padded
sequence number last) are each read once and in full.  The copy of ``tensorboard_dir`` is a sync:
every ``SYNC_INTERVAL_S`` and at ``finish``, each file whose size or modification time changed is
sent again whole (an event file grows while its writer is open; SageMaker's TensorBoard output
config syncs the same way).  It is a separate folder so TensorBoard's name-order reading of one
folder never mixes the two writers.

The writer is the TFRecord framing TensorBoard reads (length, masked CRC-32C of the length, the
data, masked CRC-32C of the data) around a hand-encoded ``tensorflow.Event`` protobuf: standard
library only, as the SDK must stay (no protobuf, tensorboard or torch import).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import struct
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from ._log import log_once

#: The job folder (raw layout) the SDK's event files go to; the copy of ``tensorboard_dir`` is below it.
FOLDER = "tensorboard"
LOGDIR_FOLDER = f"{FOLDER}/logdir"
#: How often ``tensorboard_dir`` is synced while the run goes on (the TensorBoard app reloads every 30 s).
SYNC_INTERVAL_S = 30.0
FILE_VERSION = b"brain.Event:2"

#: One scalar as recorded: (wall time in s, step, tag, value).
Scalar = tuple[float, int, str, float]
#: One histogram (``HistogramProto``): min, max, num, sum, sum_squares, bucket limits, counts.
Histogram = tuple[float, float, float, float, float, list[float], list[float]]
#: One histogram as recorded: (wall time in s, step, tag, histogram).
HistogramItem = tuple[float, int, str, Histogram]


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum TFRecord files carry."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data: bytes) -> bytes:
    crc = crc32c(data)
    return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


def tfrecord(data: bytes) -> bytes:
    """One TFRecord: ``uint64 length, masked crc(length), data, masked crc(data)``."""
    length = struct.pack("<Q", len(data))
    return length + _masked_crc(length) + data + _masked_crc(data)


def _varint(n: int) -> bytes:
    n &= 0xFFFFFFFFFFFFFFFF  # int64 as protobuf writes it: a negative step is ten bytes
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _float32(value: float) -> bytes:
    try:
        return struct.pack("<f", value)
    except OverflowError:  # a finite double beyond float32's range
        return struct.pack("<f", math.copysign(math.inf, value))


def event(
    wall_time: float,
    step: int = 0,
    *,
    file_version: bytes | None = None,
    scalar: tuple[str, float] | None = None,
    histogram: tuple[str, Histogram] | None = None,
) -> bytes:
    """A ``tensorflow.Event``: wall_time (1, double), step (2, int64), file_version (3) or
    summary (5) holding one ``Summary.Value`` with tag (1) and simple_value (2, float) or histo
    (5, a ``HistogramProto``: min 1, max 2, num 3, sum 4, sum_squares 5 (doubles), bucket_limit 6
    and bucket 7 (packed doubles))."""
    out = b"\x09" + struct.pack("<d", wall_time) + b"\x10" + _varint(step)
    if file_version is not None:
        out += _field(3, file_version)
    if scalar is not None:
        tag, value = scalar
        summary_value = _field(1, tag.encode()) + b"\x15" + _float32(value)
        out += _field(5, _field(1, summary_value))
    if histogram is not None:
        tag, (lo, hi, num, total, squares, limits, counts) = histogram
        histo = b"".join(
            bytes([(n << 3) | 1]) + struct.pack("<d", v)
            for n, v in enumerate((lo, hi, num, total, squares), 1)
        )
        histo += _field(6, struct.pack(f"<{len(limits)}d", *limits))
        histo += _field(7, struct.pack(f"<{len(counts)}d", *counts))
        out += _field(5, _field(1, _field(1, tag.encode()) + _field(5, histo)))
    return out


def event_file(scalars: list[Scalar], histograms: list[HistogramItem] | None = None) -> bytes:
    """An event file's bytes: the version record TensorBoard expects first, then one event per
    scalar and per histogram."""
    histograms = histograms or []
    first = scalars[0][0] if scalars else histograms[0][0] if histograms else time.time()
    parts = [tfrecord(event(first, file_version=FILE_VERSION))]
    parts += [tfrecord(event(wall, step, scalar=(tag, value))) for wall, step, tag, value in scalars]
    parts += [tfrecord(event(wall, step, histogram=(tag, h))) for wall, step, tag, h in histograms]
    return b"".join(parts)


class TensorBoardFiles:
    """A run's TensorBoard output: buffered scalars, and the state of the ``tensorboard_dir`` sync.

    ``add`` may be called from any thread (a ``deque`` append); ``files`` from the collector only.
    """

    def __init__(self, logdir: Path | None, start_s: float | None = None) -> None:
        self.logdir = logdir
        self.scalars: deque[Scalar] = deque()
        self.histograms: deque[HistogramItem] = deque()  # ph.watch(tensorboard=True)
        self.event_files = 0
        self.synced_files = 0
        self._stem = f"events.out.tfevents.{int(start_s or time.time())}.{socket.gethostname()}.{os.getpid()}"
        self._seen: dict[str, tuple[int, int]] = {}
        self._next_sync = time.monotonic() + SYNC_INTERVAL_S

    def add(self, tag: str, value: float, step: int | None) -> None:
        self.scalars.append((time.time(), 0 if step is None else step, tag, value))

    def add_histogram(self, tag: str, histogram: Histogram, step: int) -> None:
        self.histograms.append((time.time(), step, tag, histogram))

    def files(self, final: bool = False) -> Iterator[tuple[str, bytes]]:
        """The files to send now, as ``(path in the job, bytes)``: a new event file for the scalars
        recorded since the last call, and (every ``SYNC_INTERVAL_S``, and when ``final``) each file
        of ``tensorboard_dir`` that changed."""
        scalars = [self.scalars.popleft() for _ in range(len(self.scalars))]
        histograms = [self.histograms.popleft() for _ in range(len(self.histograms))]
        if scalars or histograms:
            self.event_files += 1
            yield f"{FOLDER}/{self._stem}.{self.event_files:08d}", event_file(scalars, histograms)
        if self.logdir is not None and (final or time.monotonic() >= self._next_sync):
            self._next_sync = time.monotonic() + SYNC_INTERVAL_S
            yield from self._changed_in_logdir()

    def _changed_in_logdir(self) -> Iterator[tuple[str, bytes]]:
        assert self.logdir is not None
        root = self.logdir
        if not root.is_dir():
            return
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            for name in sorted(names):
                path = Path(folder, name)
                rel = path.relative_to(root).as_posix()
                try:
                    st = path.stat()
                    mark = (st.st_size, st.st_mtime_ns)
                    if self._seen.get(rel) == mark:
                        continue
                    data = path.read_bytes()
                except OSError as exc:
                    log_once(
                        "tb-read",
                        logging.WARNING,
                        "profilerhub: cannot read %s from tensorboard_dir (%s)",
                        path,
                        exc,
                    )
                    continue
                self._seen[rel] = mark
                self.synced_files += 1
                yield f"{LOGDIR_FOLDER}/{rel}", data


__all__ = ["FOLDER", "LOGDIR_FOLDER", "SYNC_INTERVAL_S", "TensorBoardFiles", "crc32c", "event_file"]
