"""The SDK's logger and its log-once helper.

Everything the SDK has to say goes to the ``profilerhub`` logger.  Problems that repeat (a hub
that is down, a disk that is full) are logged once per kind, so a failing sink cannot flood the
training log; how much was lost is counted and reported at the end instead.
"""

from __future__ import annotations

import logging
import os
import threading

logger = logging.getLogger("profilerhub")

_seen: set[str] = set()
_seen_lock = threading.Lock()


def log_once(key: str, level: int, message: str, *args: object) -> bool:
    """Log ``message`` the first time ``key`` is seen in this process; return whether it logged."""
    with _seen_lock:
        if key in _seen:
            return False
        _seen.add(key)
    logger.log(level, message, *args)
    return True


def say(message: str, *args: object) -> None:
    """Tell the person running the script (``finish``'s "where the run went"): logged at INFO,
    and written to stderr as well when nobody configured logging (INFO would be dropped)."""
    logger.info(message, *args)
    if not logger.hasHandlers():
        import contextlib
        import sys

        with contextlib.suppress(OSError, ValueError):  # a closed stderr at exit: nothing to tell
            sys.stderr.write((message % args if args else message) + "\n")


def reset_log_once() -> None:
    """Forget which keys were logged (a new run starts with a clean slate)."""
    with _seen_lock:
        _seen.clear()


def _after_fork_in_child() -> None:
    global _seen_lock
    _seen_lock = threading.Lock()  # the parent may have held it at fork time


os.register_at_fork(after_in_child=_after_fork_in_child)
