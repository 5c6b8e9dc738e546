"""Logging an outage of a dependency (the database, Redis) as two lines, not one per failed call.

    database = Outage("database")
    try:
        ...
    except Exception as exc:
        if not is_outage(exc):
            raise
        database.failed(exc)       # the first failure logs one line; later ones only count
    else:
        database.recovered()       # after failures: one line with how long and how many

    hub: database unreachable (OperationalError: connection refused); failures are counted, not
         logged, until it answers
    hub: database answers again after 12s (37 failed calls)

A beat or poll task runs every second, and during an outage each used to log a traceback; here a
process logs when an outage starts and when it ends. The component (``hub``, ``worker``,
``beat``, ``app``) is named once per process with ``name_this_process``. A process has one tracker
per dependency (``tracker("Redis")`` is the same object wherever it is asked for), so the parts
that reach one dependency (the hub's task sender, token cache, rate limiter and readiness probe
all reach Redis) feed one outage: one start line, one end line counting all their failures.
Nothing else logs an outage error. Thread-safe. Standard library only: the SDK's CLI imports core.
"""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger("profilerhub.outage")

_component = "profilerhub"

# Exceptions that mean "the dependency does not answer" rather than "this call is wrong": matched
# by class name along the MRO, so core needs neither the database driver nor redis/kombu here.
_OUTAGE_NAMES = frozenset(
    {
        "OperationalError",  # SQLAlchemy, psycopg, sqlite3, kombu
        "InterfaceError",  # a connection closed under us
        "ConnectionError",  # redis-py, builtins
        "TimeoutError",  # redis-py, builtins
        "ConnectionRefusedError",
        "ConnectionResetError",
        "BrokenPipeError",
        "Unavailable",  # profilerhub_core.errors
    }
)


def name_this_process(component: str) -> None:
    """Name the process in outage lines (``hub``, ``worker``, ``beat``); once, at start."""
    global _component
    _component = component


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says a dependency is unreachable (so the call may succeed later)."""
    return any(cls.__name__ in _OUTAGE_NAMES for cls in type(exc).__mro__)


class Outage:
    """The state of one dependency as this process sees it: up, or down since when, how often."""

    def __init__(self, dependency: str, logger: logging.Logger = log) -> None:
        self.dependency = dependency
        self.logger = logger
        self._lock = threading.Lock()
        self._since: float | None = None
        self._failures = 0

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            self._failures += 1
            if self._since is not None:
                return
            self._since = time.monotonic()
        self.logger.warning(
            "%s: %s unreachable (%s: %s); failures are counted, not logged, until it answers",
            _component, self.dependency, type(exc).__name__, _first_line(exc),
        )  # fmt: skip

    def recovered(self) -> None:
        if self._since is None:  # the common case: no lock taken
            return
        with self._lock:
            if self._since is None:
                return
            lasted, failures = time.monotonic() - self._since, self._failures
            self._since, self._failures = None, 0
        self.logger.warning(
            "%s: %s answers again after %.0fs (%d failed call%s)",
            _component, self.dependency, lasted, failures, "" if failures == 1 else "s",
        )  # fmt: skip


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


_trackers: dict[str, Outage] = {}
_trackers_lock = threading.Lock()


def tracker(dependency: str) -> Outage:
    """This process's one tracker of ``dependency`` (made on first use)."""
    with _trackers_lock:
        found = _trackers.get(dependency)
        if found is None:
            found = _trackers[dependency] = Outage(dependency)
        return found


def observe(outage: Outage, exc: BaseException) -> bool:
    """Count ``exc`` against ``outage`` if it is an outage error (True); False (nothing logged)
    for any other error, which the caller reports as it would."""
    if not is_outage(exc):
        return False
    outage.failed(exc)
    return True


DATABASE = tracker("database")
"""This process's view of its database (fed by the engine's events, ``db.session``)."""
REDIS = tracker("Redis")
"""This process's view of its Redis (the broker, and the hub's shared counters)."""
STORAGE = tracker("storage")
"""This process's view of its object store (``Unavailable`` from a store)."""


def outage_of(exc: BaseException) -> Outage:
    """Which dependency an outage error comes from (by the module of its class)."""
    module = type(exc).__module__
    if module.startswith(("redis", "kombu", "amqp")):
        return REDIS
    if type(exc).__name__ == "Unavailable":
        return STORAGE
    return DATABASE


def report(exc: BaseException) -> bool:
    """Count ``exc`` against the outage of the dependency it comes from, if it is an outage error
    (True; the database's are already counted by the engine's events); False for any other error,
    which the caller logs as it would."""
    if not is_outage(exc):
        return False
    outage = outage_of(exc)
    if outage is not DATABASE:
        outage.failed(exc)
    return True


__all__ = [
    "DATABASE",
    "REDIS",
    "STORAGE",
    "Outage",
    "is_outage",
    "name_this_process",
    "observe",
    "outage_of",
    "report",
    "tracker",
]
