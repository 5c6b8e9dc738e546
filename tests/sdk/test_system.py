"""The system sampler: /proc on Linux, psutil where /proc is not there, same record either way."""

from __future__ import annotations

import psutil
import pytest

from profilerhub import _procfs
from profilerhub._system import SystemSampler

FIELDS = {
    "ts_ns", "cpu_percent", "cpu_percent_per_core", "mem_used_bytes", "mem_total_bytes", "mem_percent",
    "proc_cpu_percent", "proc_rss_bytes", "disk_read_bytes_per_s", "disk_write_bytes_per_s",
    "net_recv_bytes_per_s", "net_sent_bytes_per_s", "cpu_iowait_percent", "disk_percent",
}  # fmt: skip


def _burn_and_sample(sampler: SystemSampler) -> dict:
    sum(i * i for i in range(300_000))  # some CPU for this process between the two reads
    return sampler.sample()


def test_proc_sampler_reports_the_documented_fields_in_line_with_psutil() -> None:
    sampler = SystemSampler()
    assert sampler._procfs is not None and sampler._psutil is None  # the /proc readers work here
    rec = _burn_and_sample(sampler)
    assert set(rec) == FIELDS
    assert len(rec["cpu_percent_per_core"]) == psutil.cpu_count()
    assert all(0 <= p <= 100 for p in rec["cpu_percent_per_core"]) and 0 < rec["proc_cpu_percent"] <= 100 * 4
    assert rec["mem_total_bytes"] == psutil.virtual_memory().total
    assert 0 <= rec["cpu_iowait_percent"] <= 100  # what IOBottleneck reads
    usage = psutil.disk_usage(".")  # DiskUtilization: how full the working directory's disk is
    assert abs(rec["disk_percent"] - 100.0 * usage.used / usage.total) < 1.0
    assert abs(rec["proc_rss_bytes"] - psutil.Process().memory_info().rss) < 16 << 20
    assert disk_totals_match_psutil()


def disk_totals_match_psutil() -> bool:
    mine = _procfs.ProcReaders().disk_bytes()
    theirs = psutil.disk_io_counters(perdisk=False)
    return (
        abs(mine.read_bytes - theirs.read_bytes) < 64 << 20
        and abs(mine.write_bytes - theirs.write_bytes) < 64 << 20
    )


def test_sampler_falls_back_to_psutil_where_proc_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_proc() -> None:
        raise FileNotFoundError("/proc/stat")

    monkeypatch.setattr(_procfs, "ProcReaders", no_proc)
    sampler = SystemSampler()
    assert sampler._psutil is psutil
    rec = _burn_and_sample(sampler)
    assert set(rec) == FIELDS
    assert len(rec["cpu_percent_per_core"]) == psutil.cpu_count()
