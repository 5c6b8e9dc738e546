"""Linux fast paths for the system sampler: the few /proc fields it needs, read directly.

psutil parses the same files but does more per call (every field, sysfs look-ups per disk, a
fresh ``open`` each time); sampling every 100 ms in a thread that shares the GIL with training,
that difference is most of the SDK's cost.  Each file stays open and is re-read with one
``pread`` at offset 0 (procfs regenerates it).  Readers raise OSError where /proc is missing; the
sampler then uses psutil.
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple


class ProcFile:
    """A /proc file kept open; :meth:`read` returns its current content (up to ``size`` bytes)."""

    def __init__(self, path: str, size: int = 65536) -> None:
        self.size = size
        self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def read(self) -> bytes:
        return os.pread(self.fd, self.size, 0)

    def close(self) -> None:
        os.close(self.fd)


class DiskBytes(NamedTuple):
    read_bytes: int
    write_bytes: int


class NetBytes(NamedTuple):
    bytes_recv: int
    bytes_sent: int


class ProcReaders:
    """Every /proc reader the sampler uses, on files opened once."""

    def __init__(self) -> None:
        ncpu = os.cpu_count() or 1
        # The per-CPU lines come first in /proc/stat (before the long "intr" line).
        self._stat = ProcFile("/proc/stat", 4096 + 160 * ncpu)
        self._meminfo = ProcFile("/proc/meminfo", 8192)
        self._diskstats = ProcFile("/proc/diskstats", 1 << 18)
        self._netdev = ProcFile("/proc/net/dev", 1 << 16)
        self._self = ProcFile(f"/proc/{os.getpid()}/stat", 4096)
        # Whole disks (not partitions), so a partition's I/O is not counted twice.
        self._disks = frozenset(
            n.encode() for n in os.listdir("/sys/block") if not n.startswith(("loop", "ram"))
        )
        self._ticks = os.sysconf("SC_CLK_TCK")
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._prev_cpu = self._cores()
        self.iowait_percent = 0.0
        """Mean time the cores waited for I/O (%) over the last ``cpu_percent`` interval."""
        self._prev_self = self._self_times()

    def close(self) -> None:
        for f in (self._stat, self._meminfo, self._diskstats, self._netdev, self._self):
            f.close()

    def _cores(self) -> list[tuple[int, int, int]]:
        out = []
        for line in self._stat.read().split(b"\n"):
            if not line.startswith(b"cpu"):
                break
            if line[3:4] == b" ":
                continue  # the all-CPU line: the total is the mean of the cores
            f = [int(x) for x in line.split()[1:9]]  # user nice system idle iowait irq softirq steal
            total = sum(f)
            out.append((total - f[3] - f[4], f[4], total))  # busy = all but idle and iowait (as psutil)
        return out

    def cpu_percent(self) -> list[float]:
        """Per-core busy % since the previous call; ``iowait_percent`` is set from the same reading."""
        now = self._cores()
        pct, wait, cores = [], 0.0, 0
        for (busy0, io0, tot0), (busy1, io1, tot1) in zip(self._prev_cpu, now, strict=False):
            dt = tot1 - tot0
            pct.append(round(100.0 * (busy1 - busy0) / dt, 1) if dt > 0 else 0.0)
            if dt > 0:
                wait += 100.0 * (io1 - io0) / dt
                cores += 1
        self._prev_cpu = now
        self.iowait_percent = round(wait / cores, 2) if cores else 0.0
        return pct

    def memory(self) -> tuple[int, int]:
        """``(total, available)`` bytes."""
        total = available = -1
        for line in self._meminfo.read().split(b"\n"):
            if line.startswith(b"MemTotal:"):
                total = int(line.split()[1]) * 1024
            elif line.startswith(b"MemAvailable:"):
                available = int(line.split()[1]) * 1024
                break
        if total < 0 or available < 0:
            raise OSError("/proc/meminfo lacks MemTotal/MemAvailable")
        return total, available

    def disk_bytes(self) -> DiskBytes:
        read = write = 0
        for line in self._diskstats.read().split(b"\n"):
            f = line.split()
            if len(f) > 9 and f[2] in self._disks:
                read += int(f[5]) * 512  # diskstats sectors are always 512 bytes
                write += int(f[9]) * 512
        return DiskBytes(read, write)

    def net_bytes(self) -> NetBytes:
        """Every interface but loopback."""
        recv = sent = 0
        for line in self._netdev.read().split(b"\n")[2:]:
            name, _, counters = line.partition(b":")
            if not counters or name.strip() == b"lo":
                continue
            f = counters.split()
            recv += int(f[0])
            sent += int(f[8])
        return NetBytes(recv, sent)

    def _self_times(self) -> tuple[float, int, int]:
        # The command name (field 2) may hold spaces: split after its closing parenthesis.
        f = self._self.read().rpartition(b")")[2].split()
        # f[11], f[12]: utime, stime (fields 14, 15); f[21]: rss in pages (field 24).
        return time.monotonic(), int(f[11]) + int(f[12]), int(f[21])

    def process(self) -> tuple[float, int]:
        """This process's CPU % since the previous call (100 = one core) and resident bytes."""
        now = self._self_times()
        dt = now[0] - self._prev_self[0]
        pct = 100.0 * (now[1] - self._prev_self[1]) / self._ticks / dt if dt > 0 else 0.0
        self._prev_self = now
        return round(pct, 1), now[2] * self._page
