"""The SDK's timestamps: nanoseconds on the clock the PyTorch profiler's trace uses.

Kineto (as shipped with torch 2.13) stamps events with ``CLOCK_REALTIME``: a Chrome-trace event's
absolute time is ``baseTimeNanoseconds + ts * 1000`` (``ts`` is in microseconds relative to the
trace's ``baseTimeNanoseconds``), and that equals :func:`time.time_ns` taken at the same moment.
So every SDK timestamp is ``time.time_ns()``: Unix-epoch nanoseconds.  ``tests/sdk`` records a
trace and checks an annotation's SDK times against the same range in the trace.
"""

from __future__ import annotations

import time
from typing import Any

#: The SDK's clock. Bound once: a module attribute lookup is all an annotation pays.
now_ns = time.time_ns

CLOCK_NAME = "CLOCK_REALTIME"


def clock_info() -> dict[str, Any]:
    """What ``job.json`` says about the clock: its name and its offset from the monotonic clock.

    Two offsets (taken at the start and at the end of a run) that differ show that the wall clock
    was stepped (NTP) during the run.
    """
    return {
        "clock": CLOCK_NAME,
        "source": "time.time_ns",
        "unit": "ns",
        "realtime_minus_monotonic_ns": time.time_ns() - time.monotonic_ns(),
        "torch_trace_mapping": "ns = baseTimeNanoseconds + ts_us * 1000",
    }
