"""A store whose outages are logged as two lines (``outage.STORAGE``), not one per failed call.

    store = observed(open_job_store(settings))   # the hub's store
    store.put(key, data)   # Unavailable: counted (the first logs "storage unreachable"), raised
                           # success after failures: "storage answers again after 12s (9 failed calls)"

Every method of the wrapped store passes through; an ``Unavailable`` it raises (the disk full, S3
not answering), at the call or while its iterator is read (``list``, ``stream``), counts against
the process's storage outage; a later success of a method that failed ends it. (A full disk
fails writes while reads still work: the reads in between must not end the outage each time.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast

from profilerhub_core.errors import Unavailable
from profilerhub_core.outage import STORAGE, Outage

from .base import ObjectStore


class ObservedStore:
    """``store`` with its outages tracked by ``outage`` (see the module)."""

    def __init__(self, store: ObjectStore, outage: Outage = STORAGE) -> None:
        self._store = store
        self._outage = outage
        self._failing: set[str] = set()  # methods that failed in the outage going on

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        return self._observed(name, value) if callable(value) else value

    def _failed(self, name: str, exc: Unavailable) -> None:
        self._failing.add(name)
        self._outage.failed(exc)

    def _succeeded(self, name: str) -> None:
        if name in self._failing:
            self._failing.clear()
            self._outage.recovered()

    def _observed(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = method(*args, **kwargs)
            except Unavailable as exc:
                self._failed(name, exc)
                raise
            if isinstance(result, Iterator) and not hasattr(result, "read"):  # list(), stream()
                return self._read(name, result)
            self._succeeded(name)
            return result

        return call

    def _read(self, name: str, items: Iterator[Any]) -> Iterator[Any]:
        try:
            yield from items
        except Unavailable as exc:
            self._failed(name, exc)
            raise
        self._succeeded(name)


def observed(store: ObjectStore, outage: Outage = STORAGE) -> ObjectStore:
    """``store`` as an ``ObjectStore`` whose outages ``outage`` tracks."""
    return cast(ObjectStore, ObservedStore(store, outage))


__all__ = ["ObservedStore", "observed"]
