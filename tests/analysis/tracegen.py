"""Tiny hand-made Kineto traces for the analysis tests (built in code, one event per line).

Times are µs as Kineto writes them; ``pid`` of GPU events is the device, ``tid`` the stream.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson

from profilerhub_analysis.build import parse_trace
from profilerhub_analysis.store import EventStore

CPU_PID = 4242
CPU_TID = 4242


def event(
    name: str, cat: str, ts: float, dur: float, pid: Any = CPU_PID, tid: Any = CPU_TID, **args: Any
) -> dict[str, Any]:
    e: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e


def runtime(
    name: str, ts: float, dur: float, correlation: int, cat: str = "cuda_runtime", **args: Any
) -> dict[str, Any]:
    return event(name, cat, ts, dur, correlation=correlation, **args)


def kernel(
    name: str,
    ts: float,
    dur: float,
    correlation: int | None = None,
    device: int = 0,
    stream: int = 7,
    cat: str = "kernel",
    **args: Any,
) -> dict[str, Any]:
    if correlation is not None:
        args["correlation"] = correlation
    return event(name, cat, ts, dur, pid=device, tid=stream, device=device, stream=stream, **args)


def memcpy(
    direction: str,
    ts: float,
    dur: float,
    correlation: int | None = None,
    nbytes: int | None = None,
    cat: str = "gpu_memcpy",
    **where: Any,
) -> dict[str, Any]:
    """A copy named like Kineto's (``Memcpy HtoD (Device -> Device)``); ``where``: device, stream."""
    extra = {} if nbytes is None else {"bytes": nbytes}
    return kernel(f"Memcpy {direction} (Device -> Device)", ts, dur, correlation, cat=cat, **where, **extra)


def memset(
    ts: float,
    dur: float,
    correlation: int | None = None,
    nbytes: int | None = None,
    cat: str = "gpu_memset",
    **where: Any,
) -> dict[str, Any]:
    return memcpy("", ts, dur, correlation, nbytes, cat, **where) | {"name": "Memset (Device)"}


def annotation(name: str, ts: float, dur: float, cat: str = "user_annotation") -> dict[str, Any]:
    return event(name, cat, ts, dur)


def document(events: list[dict[str, Any]], **header: Any) -> dict[str, Any]:
    return {"schemaVersion": 1, **header, "traceEvents": events}


def encode(events: list[dict[str, Any]], **header: Any) -> bytes:
    return orjson.dumps(document(events, **header))


def store_of(events: list[dict[str, Any]], **header: Any) -> EventStore:
    return parse_trace(encode(events, **header), source="test")


def write_trace(path: Path, events: list[dict[str, Any]], gz: bool = True, **header: Any) -> Path:
    data = encode(events, **header)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path
