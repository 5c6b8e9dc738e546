"""One trace's ingest memory: held near its budget, and its peak measured by the task itself.

The budget is ``job_ingest_trace_memory_bytes`` (default 1 GiB): the RSS one trace's parse and
views may reach, the worker process's own memory (its interpreter and libraries) included.
``trace_memory(budget)`` wraps one trace's ingest and

* keeps the pages of its file-backed columns from piling up in RSS (``scratch.resident_limit``
  at ``trim_at(budget)``): the columns and timeline index are spilled to nameless files as they
  grow, and their pages are let go again past that point, so what RSS holds beyond it is the
  code's anonymous working set;
* measures the peak from the kernel: the process's high-water mark (``VmHWM`` in
  ``/proc/self/status``) is reset (``/proc/self/clear_refs``: ``5``) when the trace starts and read
  when it ends, so the figure is the exact peak RSS (anonymous and file-backed pages) of the
  process while the trace was ingested, not a sample. With other traces ingested at once in the
  same process (``--pool threads``) the mark is not reset under them (that would hide their peak):
  the figure then covers them too and says so (``alone: false``), an upper bound of this trace's.
  Where the mark cannot be reset (not Linux, or ``/proc`` read-only), ``ru_maxrss`` (the process's
  peak since it started) stands in, also an upper bound (``since_start: true``).

The figures (``TracePeak.as_record``) go into the trace's log line and its part
(``processed/parts/<n>.json``, ``fanout``), so an operator sizing ingest pods, and a test, read what
the task measured. A peak over the budget is logged as a warning: the budget bounds the spilled
columns' pages, not what the code holds in anonymous memory (``docs/analysis.md`` has the figures).
"""

from __future__ import annotations

import resource
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from profilerhub_analysis import scratch

#: The default budget of one trace's ingest (``job_ingest_trace_memory_bytes``).
DEFAULT_TRACE_MEMORY = 1 << 30
_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_measuring: list[TracePeak] = []  # the traces being measured in this process now
_lock = threading.Lock()


def trim_at(budget: int) -> int:
    """The RSS past which a trace's scratch pages are let go: below ``budget`` by an eighth of it
    (at least 32 MiB), the room pages touched between two checks may take."""
    return budget - max(budget // 8, 32 << 20)


def _status_kib() -> dict[str, int]:
    try:
        lines = _STATUS.read_text().splitlines()
    except OSError:
        return {}
    fields = (line.split(":", 1) for line in lines if ":" in line)
    return {k: int(v.split()[0]) for k, v in fields if k in ("VmHWM", "VmRSS", "RssAnon", "RssFile")}


def rss_bytes() -> int:
    """This process's RSS now (0 where ``/proc`` has none)."""
    return _status_kib().get("VmRSS", 0) << 10


def _reset_peak() -> bool:
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return "VmHWM" in _status_kib()


def _maxrss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak << 10)


@dataclass(eq=False)  # by identity: two traces measured at once may hold the same figures
class TracePeak:
    """What ``trace_memory`` measured; ``peak_rss`` is set when the block ends."""

    budget: int
    base_rss: int
    """RSS when the trace started (the process's own memory, what the trace's ingest adds to)."""
    peak_rss: int = 0
    alone: bool = True
    """No other trace was ingested in this process meanwhile."""
    since_start: bool = False
    """The peak is the process's since it started (the mark could not be reset)."""

    @property
    def over(self) -> bool:
        return self.peak_rss > self.budget

    def as_record(self) -> dict[str, int | bool]:
        return {
            "peak_rss_bytes": self.peak_rss,
            "base_rss_bytes": self.base_rss,
            "budget_bytes": self.budget,
            "alone": self.alone,
            "since_start": self.since_start,
        }

    def describe(self) -> str:
        mib = 1 << 20
        text = (
            f"peak RSS {self.peak_rss / mib:.0f} MiB ({self.base_rss / mib:.0f} MiB before it) "
            f"of a {self.budget / mib:.0f} MiB budget"
        )
        if not self.alone:
            text += ", other traces ingested in this process meanwhile"
        if self.since_start:
            text += ", the process's peak since it started"
        return text


@contextmanager
def trace_memory(budget: int) -> Iterator[TracePeak]:
    """Ingest one trace inside the block: its scratch pages held under ``trim_at(budget)``, its
    peak RSS measured (see the module's docstring); the ``TracePeak`` is complete once it ends."""
    with _lock:
        first = not _measuring
        reset = _reset_peak() if first else not _measuring[0].since_start  # the mark the first reset
        peak = TracePeak(budget=budget, base_rss=rss_bytes(), alone=first, since_start=not reset)
        for other in _measuring:
            other.alone = False  # they share the mark from here on
        _measuring.append(peak)
    try:
        with scratch.resident_limit(trim_at(budget)):
            yield peak
    finally:
        with _lock:
            _measuring.remove(peak)
            status = _status_kib()
            peak.peak_rss = status["VmHWM"] << 10 if reset and "VmHWM" in status else _maxrss_bytes()


__all__ = ["DEFAULT_TRACE_MEMORY", "TracePeak", "rss_bytes", "trace_memory", "trim_at"]
