"""A job's series, written at full resolution at ingest (``processed/series.npz``).

What rules and the metrics API read instead of the summary's downsampled series. One ``.npz``
(uncompressed numpy arrays, loaded without pickle):

    sys.t_ns                 system sample times (epoch ns, sorted)
    sys.<column>             one float column per system metric (``cpu_percent``, ``gpu0.util_percent`` …)
    met.<i>.t_ns / .value / .step   training metric number ``i`` (NaN = non-finite value, step -1 = none)
    met.names                the metric names, in ``i`` order (a unicode array)
    steps.start_ns / .dur_ns / .number, dl.start_ns / .dur_ns     step and data-loading ranges
    x.<name>                 arrays stored alongside by the caller (``pack(extra=...)``, ``extras``)
    roll.names               a rolled-up series (``rollup``, by the retention setting): its metric names
    roll.<res_ns>.<i>.<field>  metric ``i``'s aggregates per period of ``res_ns`` (``ROLLUP_FIELDS``)

A rolled-up series keeps, in ``sys.*`` and ``met.*``, the averages of its finest resolution (what
rules, the report and the dashboard read), and in ``rollups`` each kept resolution's aggregates
(what the metrics API answers from).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np

#: One metric's aggregates at one resolution, an array each, one entry per non-empty period:
#: the period's start (a multiple of the resolution, epoch ns), its finite samples' count, sum,
#: minimum, maximum and percentiles, its last sample's value and time, and its last step (-1: none).
ROLLUP_FIELDS = ("t_ns", "count", "sum", "min", "max", "p50", "p90", "p99", "last", "last_t_ns", "step")
Rollup = dict[str, np.ndarray]


@dataclass
class JobSeries:
    sys_t_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sys: dict[str, np.ndarray] = field(default_factory=dict)
    metrics: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    """name -> (t_ns, value, step)."""
    steps: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    dataloader: tuple[np.ndarray, np.ndarray] | None = None
    rollups: dict[int, dict[str, Rollup]] = field(default_factory=dict)
    """resolution (ns) -> metric name -> its ``Rollup``; empty at full resolution."""

    @property
    def resolution_ns(self) -> int:
        """The finest resolution kept (ns); 0: full resolution."""
        return min(self.rollups, default=0)


def metric_columns(records: Sequence[Any]) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """name -> ``(t_ns, value, step)`` by time, of the SDK's decoded metric records."""
    if not records:
        return {}
    names, inverse = np.unique(np.array(list(map(attrgetter("name"), records))), return_inverse=True)
    values = np.array([np.nan if r.value is None else r.value for r in records], dtype=np.float64)
    steps = np.array([-1 if r.step is None else r.step for r in records], dtype=np.int64)
    ts = np.fromiter(map(attrgetter("ts_ns"), records), np.int64, len(records))
    order = np.lexsort((ts, inverse))
    bounds = np.searchsorted(inverse[order], np.arange(len(names) + 1))
    out = {}
    for i, name in enumerate(names.tolist()):
        rows = order[bounds[i] : bounds[i + 1]]
        out[name] = (ts[rows], values[rows], steps[rows])
    return out


FLAT = b"PHSERIES-FLAT1\n"
"""How a flat ``pack`` begins (an ``.npz`` begins with ``PK``)."""
_ALIGN = 64


def pack(series: JobSeries, extra: Mapping[str, np.ndarray] | None = None, *, flat: bool = False) -> bytes:
    """The ``.npz`` of ``series`` and, under ``x.<name>``, the ``extra`` arrays kept with it.

    ``flat``: the same arrays in a layout ``unpack`` reads without copying or checksumming them
    (``FLAT``, an 8-byte header length, a JSON header of ``[name, dtype, shape, offset]``, the
    arrays at 64-byte aligned offsets): for the live rules' cache, rewritten and read every scan."""
    arrays: dict[str, np.ndarray] = {"sys.t_ns": series.sys_t_ns}
    arrays |= {f"sys.{k}": v for k, v in series.sys.items()}
    names = sorted(series.metrics)
    arrays["met.names"] = np.array(names, dtype=np.str_)
    for i, name in enumerate(names):
        t, v, s = series.metrics[name]
        arrays |= {f"met.{i}.t_ns": t, f"met.{i}.value": v, f"met.{i}.step": s}
    if series.steps is not None:
        arrays |= dict(zip(("steps.start_ns", "steps.dur_ns", "steps.number"), series.steps, strict=True))
    if series.dataloader is not None:
        arrays |= dict(zip(("dl.start_ns", "dl.dur_ns"), series.dataloader, strict=True))
    arrays |= {f"x.{k}": v for k, v in (extra or {}).items()}
    if series.rollups:
        rolled = sorted({name for tier in series.rollups.values() for name in tier})
        arrays["roll.names"] = np.array(rolled, dtype=np.str_)
        for res, tier in series.rollups.items():
            for i, name in enumerate(rolled):
                if name in tier:
                    arrays |= {f"roll.{res}.{i}.{k}": tier[name][k] for k in ROLLUP_FIELDS}
    if flat:
        return _flat(arrays)
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def _flat(arrays: dict[str, np.ndarray]) -> bytes:
    header: list[list[Any]] = []
    parts: list[bytes | memoryview] = []
    offset = 0
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        pad = -offset % _ALIGN
        parts.append(bytes(pad))
        offset += pad
        header.append([name, a.dtype.str, list(a.shape), offset])
        parts.append(a.reshape(-1).view(np.uint8).data)
        offset += a.nbytes
    head = json.dumps(header).encode()
    lead = FLAT + len(head).to_bytes(8, "little") + head
    return b"".join([lead, bytes(-len(lead) % _ALIGN), *parts])


def _members(data: bytes) -> dict[str, np.ndarray]:
    if not data.startswith(FLAT):
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    size = int.from_bytes(data[len(FLAT) : len(FLAT) + 8], "little")
    lead = len(FLAT) + 8 + size
    base = lead + -lead % _ALIGN
    out = {}
    for name, dtype, shape, offset in json.loads(data[len(FLAT) + 8 : lead]):
        dt = np.dtype(dtype)
        count = int(np.prod(shape))
        out[name] = np.frombuffer(data, dt, count, base + offset).reshape(shape)  # read-only views
    return out


def unpack(data: bytes) -> JobSeries:
    """The series ``pack`` stored (either layout)."""
    z = _members(data)
    out = JobSeries(sys_t_ns=z["sys.t_ns"])
    out.sys = {k[4:]: v for k, v in z.items() if k.startswith("sys.") and k != "sys.t_ns"}
    for i, name in enumerate(z["met.names"].tolist()):
        out.metrics[str(name)] = (z[f"met.{i}.t_ns"], z[f"met.{i}.value"], z[f"met.{i}.step"])
    if "steps.start_ns" in z:
        out.steps = (z["steps.start_ns"], z["steps.dur_ns"], z["steps.number"])
    if "dl.start_ns" in z:
        out.dataloader = (z["dl.start_ns"], z["dl.dur_ns"])
    if "roll.names" in z:
        rolled = z["roll.names"].tolist()
        for key in z:
            parts = key.split(".")
            if parts[0] == "roll" and len(parts) == 4:
                tier = out.rollups.setdefault(int(parts[1]), {})
                tier.setdefault(str(rolled[int(parts[2])]), {})[parts[3]] = z[key]
    return out


def extras(data: bytes) -> dict[str, np.ndarray]:
    """The ``extra`` arrays ``pack`` stored with a series, by name."""
    return {k[2:]: v for k, v in _members(data).items() if k.startswith("x.")}


__all__ = [
    "FLAT",
    "ROLLUP_FIELDS",
    "JobSeries",
    "Rollup",
    "extras",
    "metric_columns",
    "pack",
    "unpack",
]
