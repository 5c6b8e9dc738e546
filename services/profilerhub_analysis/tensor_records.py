"""The SDK's ``tensors/*.jsonl.gz`` records, read and written: the chunk format between
``ph.watch`` and ``TensorTable.from_records`` (``profilerhub_analysis.tensors`` defines the
reductions; ``docs/debugging.md`` the format).

    records_of_chunk(data)      a gzipped chunk -> its records (``ValueError`` if it is not one)
    record(name, tensors, ...)  one record in the SDK's own format, what tests build tables from
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from profilerhub_analysis.tensors import STATS, collection_of, dead_fraction, reduce_array

MAX_CHUNK_BYTES = 256 << 20
"""A ``tensors/*.jsonl.gz`` chunk larger than this once decompressed is refused (``ValueError``)."""


def records_of_chunk(data: bytes) -> list[dict[str, Any]]:
    """The records of one SDK chunk (gzipped JSON lines): reductions, and ``"kind": "full"``
    manifests of tensors saved whole. ``ValueError`` for a chunk that is not gzip/JSON."""
    try:
        text = zlib.decompressobj(31).decompress(data, MAX_CHUNK_BYTES + 1)
    except zlib.error as exc:
        raise ValueError(f"not a gzip file ({exc})") from None
    if len(text) > MAX_CHUNK_BYTES:
        raise ValueError(f"over {MAX_CHUNK_BYTES} bytes once decompressed")
    return records_of_lines(text)


def records_of_lines(text: bytes) -> list[dict[str, Any]]:
    """The records of one decompressed chunk; ``ValueError`` for what is not JSON objects."""
    try:
        out = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as exc:
        raise ValueError(f"not JSON lines ({exc})") from None
    if not all(isinstance(r, dict) for r in out):
        raise ValueError("a line is not a JSON object")
    return out


def encode_stat(v: float) -> float | str | None:
    """A statistic as the SDK writes it in JSON: NaN is null, ±inf the strings "inf"/"-inf"."""
    if math.isnan(v):
        return None
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def record(
    mode: str,
    step: int,
    tensors: Mapping[str, np.ndarray],
    *,
    rank: int = 0,
    global_step: int | None = None,
    ts_ns: int = 0,
    types: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One ``tensors/*.jsonl.gz`` line for ``tensors`` (name -> values), reduced with
    ``reduce_array``: what tests build tables from, in the SDK's own format."""
    names, shapes, stats, hists = [], [], [], []
    for name, values in tensors.items():
        s, h = reduce_array(values)
        if collection_of(name) == "activations":
            s[STATS.index("dead_frac")] = dead_fraction(values)
        names.append(name)
        shapes.append(list(np.shape(values)))
        stats.append([encode_stat(float(v)) for v in s])
        hists.append(h.tolist())
    return {
        "mode": mode,
        "step": step,
        "global_step": step if global_step is None else global_step,
        "rank": rank,
        "ts_ns": ts_ns,
        "names": names,
        "shapes": shapes,
        "stats": stats,
        "hist": hists,
        "types": [(types or {}).get(n) for n in names],
        "classes": [class_counts_of(v) if collection_of(n) == "labels" else None for n, v in tensors.items()],
    }


def class_counts_of(values: np.ndarray) -> list[int] | None:
    """The ``classes`` of a label tensor (integer class indices; None for floats)."""
    x = np.asarray(values).reshape(-1)
    if not np.issubdtype(x.dtype, np.integer):
        return None
    x = x[x >= 0]
    return np.bincount(x).tolist() if x.size else []


__all__ = [
    "MAX_CHUNK_BYTES",
    "class_counts_of",
    "encode_stat",
    "record",
    "records_of_chunk",
    "records_of_lines",
]
