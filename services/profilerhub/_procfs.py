"""Linux fast paths for the system sampler: the few /proc fields it needs, read directly.

psutil parses the same files but does more per call (every field, sysfs look-ups per disk);
sampling every 100 ms in a thread that shares the GIL with training, that difference is most of
the SDK's cost.  Each reader raises OSError where /proc is missing; the sampler then uses psutil.
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple


class DiskBytes(NamedTuple):
    read_bytes: int
    write_bytes: int


def whole_disks() -> frozenset[str]:
    """The whole disks (not partitions) in /sys/block, so a partition's I/O is not counted twice."""
    return frozenset(n for n in os.listdir("/sys/block") if not n.startswith(("loop", "ram")))


def disk_bytes(disks: frozenset[str]) -> DiskBytes:
    read = write = 0
    with open("/proc/diskstats", "rb") as fh:
        for line in fh:
            f = line.split()
            if len(f) > 9 and f[2].decode() in disks:
                read += int(f[5]) * 512  # diskstats sectors are always 512 bytes
                write += int(f[9]) * 512
    return DiskBytes(read, write)


def memory() -> tuple[int, int]:
    """``(total, available)`` bytes from /proc/meminfo."""
    total = available = -1
    with open("/proc/meminfo", "rb") as fh:
        for line in fh:
            if line.startswith(b"MemTotal:"):
                total = int(line.split()[1]) * 1024
            elif line.startswith(b"MemAvailable:"):
                available = int(line.split()[1]) * 1024
                break
    if total < 0 or available < 0:
        raise OSError("/proc/meminfo lacks MemTotal/MemAvailable")
    return total, available


class CpuPercent:
    """Per-core busy % between calls, from /proc/stat (busy = all but idle and iowait, as psutil)."""

    def __init__(self) -> None:
        self._prev = self._read()

    @staticmethod
    def _read() -> list[tuple[int, int]]:
        out = []
        with open("/proc/stat", "rb") as fh:
            for line in fh:
                if not line.startswith(b"cpu"):
                    break
                if line[3:4] == b" ":
                    continue  # the all-CPU line: the total is the mean of the cores
                f = [int(x) for x in line.split()[1:9]]  # user nice system idle iowait irq softirq steal
                total = sum(f)
                out.append((total - f[3] - f[4], total))
        return out

    def __call__(self) -> list[float]:
        now = self._read()
        pct = []
        for (busy0, tot0), (busy1, tot1) in zip(self._prev, now, strict=False):
            dt = tot1 - tot0
            pct.append(round(100.0 * (busy1 - busy0) / dt, 1) if dt > 0 else 0.0)
        self._prev = now
        return pct


class NetBytes(NamedTuple):
    bytes_recv: int
    bytes_sent: int


def net_bytes() -> NetBytes:
    """Bytes received and sent by every interface but loopback, from /proc/net/dev."""
    recv = sent = 0
    with open("/proc/net/dev", "rb") as fh:
        for line in fh.readlines()[2:]:
            name, _, counters = line.partition(b":")
            if name.strip() == b"lo":
                continue
            f = counters.split()
            recv += int(f[0])
            sent += int(f[8])
    return NetBytes(recv, sent)


class ProcessUsage:
    """This process's CPU % between calls (100 = one core) and its resident memory."""

    _TICKS = os.sysconf("SC_CLK_TCK")
    _PAGE = os.sysconf("SC_PAGE_SIZE")

    def __init__(self) -> None:
        self._prev = self._read()

    @staticmethod
    def _read() -> tuple[float, int, int]:
        with open(f"/proc/{os.getpid()}/stat", "rb") as fh:
            # The command name (field 2) may hold spaces: split after its closing parenthesis.
            f = fh.read().rpartition(b")")[2].split()
        # f[11], f[12]: utime, stime (fields 14, 15); f[21]: rss in pages (field 24).
        return time.monotonic(), int(f[11]) + int(f[12]), int(f[21])

    def __call__(self) -> tuple[float, int]:
        now = self._read()
        dt = now[0] - self._prev[0]
        pct = 100.0 * (now[1] - self._prev[1]) / self._TICKS / dt if dt > 0 else 0.0
        self._prev = now
        return round(pct, 1), now[2] * self._PAGE
