"""A small process supervisor for ``profilerhub up``: start children, stop them all together.

    sup = Supervisor()
    sup.add("hub", [sys.executable, "-m", "profilerhub.cli.main", "hub"], env)
    sup.start_all()
    code = sup.wait()      # returns when a child exits or on Ctrl-C / SIGTERM; stops every child

Children are stopped in reverse start order with SIGTERM, then SIGKILL after a grace period. On
Linux each child also gets SIGTERM if the supervisor dies without cleaning up (PR_SET_PDEATHSIG),
so nothing is left behind. Standard library only: ``profilerhub --help`` must stay light.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Child:
    name: str
    argv: Sequence[str]
    env: Mapping[str, str]
    process: subprocess.Popen[bytes] | None = None


@dataclass
class Supervisor:
    grace_seconds: float = 10.0
    on_event: Callable[[str], None] = lambda message: print(message, file=sys.stderr)
    children: list[Child] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def add(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> Child:
        child = Child(name, list(argv), dict(env if env is not None else os.environ))
        self.children.append(child)
        return child

    def start(self, child: Child) -> None:
        child.process = subprocess.Popen(child.argv, env=dict(child.env), preexec_fn=_die_with_parent)
        self.on_event(f"started {child.name} (pid {child.process.pid})")

    def start_all(self) -> None:
        for child in self.children:
            if child.process is None:
                self.start(child)

    def _request_stop(self, signum: int, _frame: FrameType | None) -> None:
        self.on_event(f"received {signal.Signals(signum).name}, stopping")
        self._stop.set()

    def wait(
        self, ready: Callable[[], bool] | None = None, on_ready: Callable[[], None] | None = None
    ) -> int:
        """Block until a child exits or a stop is requested; stop everything; return an exit code.

        ``ready`` is polled until it first returns true, then ``on_ready`` runs (e.g. to announce
        the URL once the hub answers).
        """
        previous = {s: signal.signal(s, self._request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
        code = 0
        try:
            while not self._stop.wait(0.2):
                if ready is not None and ready():
                    ready = None
                    if on_ready is not None:
                        on_ready()
                for child in self.children:
                    if child.process is not None and child.process.poll() is not None:
                        self.on_event(
                            f"{child.name} exited with code {child.process.returncode}; stopping the rest"
                        )
                        code = child.process.returncode or 1
                        self._stop.set()
                        break
        finally:
            self.stop_all()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        return code

    def stop_all(self) -> None:
        running = [c for c in reversed(self.children) if c.process is not None and c.process.poll() is None]
        for child in running:
            assert child.process is not None
            child.process.terminate()
        deadline = time.monotonic() + self.grace_seconds
        for child in running:
            assert child.process is not None
            try:
                child.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.on_event(f"{child.name} did not stop within {self.grace_seconds:.0f}s; killing it")
                child.process.kill()
                child.process.wait()
            self.on_event(f"stopped {child.name}")


def wait_until(check: Callable[[], bool], timeout: float, interval: float = 0.1) -> bool:
    """Poll ``check`` until it is true or ``timeout`` seconds pass; return whether it became true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return False


__all__ = ["Child", "Supervisor", "wait_until"]
