"""System metrics: CPU, memory, disk and network I/O from /proc (psutil elsewhere); GPUs by NVML.

:meth:`SystemSampler.sample` returns one record (see ``docs/sdk.md`` for the fields).  Rates are
computed from the counters' difference since the previous sample.  A source that fails (no NVML,
a counter file missing inside a container) is logged once and left out from then on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from typing import Any

from . import _procfs
from ._clock import now_ns
from ._log import log_once


class SystemSampler:
    """Stateful sampler (rates and CPU % are since the previous call); one thread uses it."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._gpus: list[Any] = []
        self._prev_ns = now_ns()
        self._psutil: Any = None
        self._procfs: _procfs.ProcReaders | None = None
        try:  # Linux: read /proc directly (see _procfs)
            readers = _procfs.ProcReaders()
            readers.memory()
            readers.net_bytes()
            self._procfs = readers
        except (OSError, ValueError, IndexError):  # elsewhere (or an odd /proc): psutil
            import psutil

            self._psutil = psutil
            self._proc = psutil.Process(os.getpid())
            psutil.cpu_percent(percpu=True)  # the first calls only prime the counters
            psutil.cpu_times_percent()
            self._proc.cpu_percent()
        self._prev_disk = self._disk()
        self._prev_net = self._net()
        self._workdir = os.getcwd()  # how full its disk is: SageMaker's DiskUtilization
        self._init_nvml()

    def _cpu_and_memory(self) -> tuple[list[float], int, int]:
        """Per-core CPU %, total and available memory bytes."""
        if self._procfs is not None:
            total, available = self._procfs.memory()
            return self._procfs.cpu_percent(), total, available
        vm = self._psutil.virtual_memory()
        return self._psutil.cpu_percent(percpu=True), vm.total, vm.available

    def _iowait(self) -> float | None:
        """Mean % of time the cores waited for I/O since the previous sample (None: not known here)."""
        if self._procfs is not None:
            return self._procfs.iowait_percent
        iowait = getattr(self._psutil.cpu_times_percent(), "iowait", None)  # Linux only
        return None if iowait is None else round(float(iowait), 2)

    def _process(self) -> tuple[float, int]:
        """This process's CPU % (100 = one core) and resident bytes."""
        if self._procfs is not None:
            return self._procfs.process()
        with self._proc.oneshot():
            return self._proc.cpu_percent(), self._proc.memory_info().rss

    def _disk(self) -> Any:
        try:
            if self._procfs is not None:
                return self._procfs.disk_bytes()
            return self._psutil.disk_io_counters(perdisk=False)
        except Exception:  # missing /proc/diskstats in some containers
            return None

    def _net(self) -> Any:
        try:
            if self._procfs is not None:
                return self._procfs.net_bytes()
            return self._psutil.net_io_counters(pernic=False)
        except Exception:
            return None

    def _init_nvml(self) -> None:
        try:
            import pynvml  # nvidia-ml-py
        except ImportError:
            return
        try:
            pynvml.nvmlInit()
            self._gpus = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self._nvml = pynvml
        except Exception as exc:  # no driver, no GPU
            log_once("nvml-init", logging.INFO, "profilerhub: NVML unavailable, no GPU metrics (%s)", exc)

    def close(self) -> None:
        if self._procfs is not None:
            self._procfs.close()
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
            self._nvml = None

    def sample(self) -> dict[str, Any]:
        ts = now_ns()
        dt = max((ts - self._prev_ns) / 1e9, 1e-6)
        per_core, mem_total, mem_available = self._cpu_and_memory()
        rec: dict[str, Any] = {
            "ts_ns": ts,
            "cpu_percent": round(sum(per_core) / max(len(per_core), 1), 2),
            "cpu_percent_per_core": per_core,
            "mem_used_bytes": mem_total - mem_available,
            "mem_total_bytes": mem_total,
            "mem_percent": round(100.0 * (mem_total - mem_available) / mem_total, 1),
        }
        iowait = self._iowait()
        if iowait is not None:  # what the IOBottleneck rule reads
            rec["cpu_iowait_percent"] = iowait
        try:
            rec["proc_cpu_percent"], rec["proc_rss_bytes"] = self._process()
        except Exception as exc:
            log_once("proc-metrics", logging.INFO, "profilerhub: no process metrics (%s)", exc)
        try:  # one statvfs call (a few µs)
            usage = shutil.disk_usage(self._workdir)
            rec["disk_percent"] = round(100.0 * usage.used / usage.total, 2) if usage.total else None
        except OSError:  # the folder went away, or an odd filesystem: no sample
            pass
        disk = self._disk()
        if disk is not None and self._prev_disk is not None:
            rec["disk_read_bytes_per_s"] = round((disk.read_bytes - self._prev_disk.read_bytes) / dt, 1)
            rec["disk_write_bytes_per_s"] = round((disk.write_bytes - self._prev_disk.write_bytes) / dt, 1)
        net = self._net()
        if net is not None and self._prev_net is not None:
            rec["net_recv_bytes_per_s"] = round((net.bytes_recv - self._prev_net.bytes_recv) / dt, 1)
            rec["net_sent_bytes_per_s"] = round((net.bytes_sent - self._prev_net.bytes_sent) / dt, 1)
        self._prev_ns, self._prev_disk, self._prev_net = ts, disk, net
        if self._nvml is not None:
            rec["gpus"] = self._sample_gpus()
        return rec

    def _sample_gpus(self) -> list[dict[str, Any]]:
        nv = self._nvml
        out: list[dict[str, Any]] = []
        for index, handle in enumerate(self._gpus):
            gpu: dict[str, Any] = {"index": index}
            try:
                util = nv.nvmlDeviceGetUtilizationRates(handle)
                mem = nv.nvmlDeviceGetMemoryInfo(handle)
                gpu.update(
                    util_percent=util.gpu,
                    mem_util_percent=util.memory,
                    mem_used_bytes=mem.used,
                    mem_total_bytes=mem.total,
                )
                gpu["power_w"] = nv.nvmlDeviceGetPowerUsage(handle) / 1000.0
                gpu["temperature_c"] = nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU)
            except Exception as exc:  # e.g. power readings not supported on this board
                log_once(
                    f"nvml-{index}",
                    logging.INFO,
                    "profilerhub: GPU %d: some metrics unavailable (%s)",
                    index,
                    exc,
                )
            out.append(gpu)
        return out
