"""Save a built ``TimelineIndex`` as plain ``.npy`` files and open it again memory-mapped.

Building an index costs seconds at ten million events; opening the saved one costs a few file
opens: every array is one ``.npy`` file mapped read-only with ``np.load(mmap_mode="r")``, so
only the pages a query touches are read, and two processes (or two jobs) opening the same files
share them in the page cache. ``index.json`` holds the scalars, the name tables and which file
each array attribute lives in (an array held by two objects is stored once).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ._ranges import RangeArgMax, RangeAtLeast
from .counters import CounterIndex
from .index import TimelineIndex

INDEX_FORMAT = "profilerhub-timeline-index/1"
_CLASSES: dict[str, type] = {
    cls.__name__: cls for cls in (TimelineIndex, RangeAtLeast, RangeArgMax, CounterIndex)
}
_LISTS = ("names", "counter_names")


def npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def _describe(obj: object, prefix: str, files: dict[str, np.ndarray], seen: dict[int, str]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "class": type(obj).__name__,
        "arrays": {},
        "scalars": {},
        "objects": {},
        "lists": {},
    }
    for attr, value in vars(obj).items():
        if isinstance(value, np.ndarray):
            fname = seen.get(id(value))
            if fname is None:
                fname = seen[id(value)] = f"{prefix}{attr}.npy"
                files[fname] = value
            doc["arrays"][attr] = fname
        elif type(value).__name__ in _CLASSES:
            doc["objects"][attr] = _describe(value, f"{prefix}{attr}.", files, seen)
        elif attr in _LISTS:
            doc["lists"][attr] = None if value is None else [str(v) for v in value]
        elif value is None or isinstance(value, int | float | str | bool):
            doc["scalars"][attr] = int(value) if isinstance(value, np.integer) else value
        else:
            raise TypeError(
                f"cannot save attribute {attr!r} of {type(obj).__name__} ({type(value).__name__})"
            )
    return doc


def iter_index_files(index: TimelineIndex, prefix: str = "") -> Iterator[tuple[str, bytes]]:
    """The index's files one at a time, as ``(file name, bytes)``: one ``.npy`` per array, then
    ``index.json``; a writer holds one array's bytes at a time, not the whole index's."""
    arrays: dict[str, np.ndarray] = {}
    doc = {"format": INDEX_FORMAT, "root": _describe(index, prefix, arrays, {})}
    for fname, array in arrays.items():
        yield fname, npy_bytes(array)
    yield f"{prefix}index.json", json.dumps(doc).encode()


def index_files(index: TimelineIndex, prefix: str = "") -> dict[str, bytes]:
    """The index as ``{file name: bytes}``: ``index.json`` plus one ``.npy`` per array."""
    return dict(iter_index_files(index, prefix))


def _restore(doc: dict[str, Any], root: Path, mmap: bool) -> Any:
    cls: Any = _CLASSES[doc["class"]]
    obj = cls.__new__(cls)
    loaded: dict[str, np.ndarray] = {}
    for attr, fname in doc["arrays"].items():
        if fname not in loaded:
            loaded[fname] = np.load(root / fname, mmap_mode="r" if mmap else None, allow_pickle=False)
        setattr(obj, attr, loaded[fname])
    for attr, value in doc["scalars"].items():
        setattr(obj, attr, value)
    for attr, value in doc["lists"].items():
        setattr(obj, attr, value)
    for attr, sub in doc["objects"].items():
        setattr(obj, attr, _restore(sub, root, mmap))
    return obj


def open_index(directory: str | Path, prefix: str = "", mmap: bool = True) -> TimelineIndex:
    """The index saved by ``index_files`` into ``directory``, its arrays memory-mapped."""
    root = Path(directory)
    doc = json.loads((root / f"{prefix}index.json").read_text())
    if doc.get("format") != INDEX_FORMAT:
        raise ValueError(f"{root}: not a saved timeline index ({doc.get('format')!r})")
    index = _restore(doc["root"], root, mmap)
    assert isinstance(index, TimelineIndex)
    return index


__all__ = ["INDEX_FORMAT", "index_files", "iter_index_files", "npy_bytes", "open_index"]
