"""Processes that die with the one that started them, and process groups ended as a whole.

    die_with_parent()                    # in a child: SIGTERM when the parent dies (Linux)
    die_with_spawning_process()          # a multiprocessing child: the same, at once if it already died
    end_group(pgid, grace=10)            # SIGTERM, wait, SIGKILL what is left; the pids it had to end

A supervisor sees only its own children: when one of them is killed with SIGKILL, whatever that
child started (uvicorn's worker processes, Celery's pool) is orphaned, not stopped, and goes on
holding what it held (a listening port). Two defences, used together by ``profilerhub up`` and
``profilerhub hub``: every such grandchild asks the kernel to signal it when its parent dies
(``PR_SET_PDEATHSIG``), and the supervisor starts each child in a process group of its own and
ends the whole group before it restarts the child, so a restart never meets a leftover.

Standard library only: the ``up`` supervisor imports this and ``profilerhub --help`` stays light.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent exits (Linux; elsewhere nothing).

    Safe between fork and exec (``preexec_fn``). The signal follows the parent *thread* that
    forked this process, so call it only in children started from their parent's main thread.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, sig)


def die_with_spawning_process(sig: int = signal.SIGTERM) -> None:
    """In a ``multiprocessing`` child (uvicorn's worker processes): die with the parent that
    spawned it, including when the parent died before this call (the kernel would never signal
    that one). Outside a multiprocessing child, nothing."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.pid is None:
        return
    die_with_parent(sig)
    if os.getppid() != parent.pid:  # already orphaned: nobody is left to signal us
        os.kill(os.getpid(), sig)


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``."""
    proc = Path("/proc")
    if not proc.is_dir():  # no /proc: ask the kernel whether anyone is left at all
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # it ended while we looked
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the last ')'
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def end_group(pgid: int, grace: float = 10.0) -> list[int]:
    """End every process left in group ``pgid``: SIGTERM, up to ``grace`` seconds to exit, then
    SIGKILL. Returns the pids that were still alive when it began (empty: nothing was left)."""
    left = group_members(pgid)
    if not left:
        return []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if group_members(pgid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 10.0  # SIGKILL cannot be refused; this bounds a stuck kernel exit
        while group_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
    return left


__all__ = ["die_with_parent", "die_with_spawning_process", "end_group", "group_members"]
