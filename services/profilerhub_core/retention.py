"""How long a job's series are kept, and at which resolution: the ``series_retention`` setting.

CloudWatch keeps a metric's datapoints at a coarser resolution as they age; ProfilerHub does the
same for a job's series (``processed/series.npz``, what the metrics API and the rules read),
counted from the job's completion. A policy is a comma-separated list of tiers, finest first,
each ``RESOLUTION:UNTIL``:

    full:15d,60s:63d,1h:455d

keeps the series at full resolution until 15 days after the job completed, then as 60 s
aggregates until day 63, then as 1 h aggregates until day 455, then deletes them. ``forever`` as
the last ``UNTIL`` keeps the last tier for as long as the job exists. Durations are a number and
a unit (``ms``, ``s``, ``m``, ``h``, ``d``). The empty policy (the default) keeps every series at
full resolution for as long as its job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

FULL = "full"
FOREVER = "forever"
#: The coarsest resolution a tier may have: the metrics API's longest period.
MAX_RESOLUTION_S = 3600.0
MIN_RESOLUTION_S = 0.1

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


@dataclass(frozen=True)
class Tier:
    """Keep the series at ``resolution_s`` (0: full resolution) until ``until`` after completion
    (None: forever)."""

    resolution_s: float
    until: timedelta | None


@dataclass(frozen=True)
class SeriesRetention:
    tiers: tuple[Tier, ...] = ()

    def due(self, age: timedelta) -> Tier | None:
        """The tier a job completed ``age`` ago belongs in; None when its series are to be deleted."""
        for tier in self.tiers:
            if tier.until is None or age < tier.until:
                return tier
        return None if self.tiers else Tier(0.0, None)

    @property
    def rolled_resolutions(self) -> tuple[float, ...]:
        """The resolutions series are rolled up to (all computed at once, from the full samples)."""
        return tuple(t.resolution_s for t in self.tiers if t.resolution_s)

    def __str__(self) -> str:
        return ",".join(f"{_res_text(t.resolution_s)}:{_until_text(t.until)}" for t in self.tiers)


def _seconds(text: str, what: str) -> float:
    m = _DURATION.fullmatch(text)
    if not m:
        raise ValueError(f"{what} {text!r} is not a duration like 60s, 5m, 1h or 15d")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _text(seconds: float) -> str:
    """``seconds`` in the largest unit that writes it whole (``15d``, ``90m``, ``0.5s``)."""
    for unit in ("d", "h", "m", "s"):
        count = seconds / _UNITS[unit]
        if count >= 1 and count == int(count):
            return f"{int(count)}{unit}"
    return f"{seconds:g}s"


def _res_text(seconds: float) -> str:
    return FULL if not seconds else _text(seconds)


def _until_text(until: timedelta | None) -> str:
    return FOREVER if until is None else _text(until.total_seconds())


def parse_retention(text: str) -> SeriesRetention:
    """The policy written as ``text`` (see the module); ``ValueError`` saying what is wrong."""
    text = text.strip()
    if not text:
        return SeriesRetention()
    tiers: list[Tier] = []
    for part in (p.strip() for p in text.split(",")):
        resolution, sep, until = part.partition(":")
        if not sep:
            raise ValueError(f"series retention tier {part!r} is not RESOLUTION:UNTIL (e.g. 60s:63d)")
        res = 0.0 if resolution.strip() == FULL else _seconds(resolution.strip(), "resolution")
        if res and not MIN_RESOLUTION_S <= res <= MAX_RESOLUTION_S:
            raise ValueError(
                f"resolution {resolution.strip()!r} must be between {MIN_RESOLUTION_S:g} s and "
                f"{MAX_RESOLUTION_S:g} s (the metrics API's shortest and longest period)"
            )
        end = None if until.strip() == FOREVER else timedelta(seconds=_seconds(until.strip(), "age"))
        if tiers:
            last = tiers[-1]
            if last.until is None:
                raise ValueError("only the last series retention tier may be kept forever")
            if res == 0 or res <= last.resolution_s:
                raise ValueError("series retention tiers go from the finest resolution to the coarsest")
            if end is not None and end <= last.until:
                raise ValueError("each series retention tier must end later than the one before")
        elif res == 0 and end is not None and end <= timedelta(0):
            raise ValueError("the full-resolution tier must last longer than 0 s")
        tiers.append(Tier(res, end))
    return SeriesRetention(tuple(tiers))


__all__ = ["FOREVER", "FULL", "SeriesRetention", "Tier", "parse_retention"]
