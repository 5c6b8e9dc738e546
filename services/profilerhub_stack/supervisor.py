"""A small process supervisor for ``profilerhub up``: start children, restart the ones that crash,
stop them all together.

    sup = Supervisor()
    sup.add("hub", [sys.executable, "-m", "profilerhub.cli.main", "hub"], env)
    sup.watch("redis", alive=redis.running, restart=redis.restart)   # something not started here
    sup.start_all()
    code = sup.wait()      # returns on Ctrl-C / SIGTERM (or a child that keeps crashing)

A child that exits is restarted after a backoff (1 s, doubling to ``max_backoff``; back to 1 s
once it has run ``healthy_after`` seconds), and each restart is announced with the exit code and
the count. One that crashes ``max_restarts`` times in a row without running ``healthy_after``
seconds stops ``up`` with its exit code: a child that cannot start is reported, not looped on.

Children are stopped in reverse start order with SIGTERM, then SIGKILL after a grace period. On
Linux each child also gets SIGTERM if the supervisor dies without cleaning up (PR_SET_PDEATHSIG),
so nothing is left behind. Each child runs in a process group of its own, and what it started is
ended with it: before a child that exited is restarted (and when ``up`` stops), whatever is left
in its group (a ``kill -9``'d hub's uvicorn workers, still holding the port) gets SIGTERM, then
SIGKILL after the grace period, so the restart finds the port free (``profilerhub_core.lifeline``).
Standard library only: ``profilerhub --help`` must stay light.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType

from profilerhub_core.lifeline import die_with_parent, end_group


@dataclass
class Child:
    name: str
    argv: Sequence[str]
    env: Mapping[str, str]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restarts: int = 0
    crashes_in_a_row: int = 0
    restart_at: float | None = None


@dataclass
class Watched:
    """Something ``up`` started itself (the embedded Redis): checked and restarted like a child."""

    name: str
    alive: Callable[[], bool]
    restart: Callable[[], object]
    restarts: int = 0


@dataclass
class Supervisor:
    grace_seconds: float = 10.0
    on_event: Callable[[str], None] = lambda message: print(message, file=sys.stderr)
    children: list[Child] = field(default_factory=list)
    max_backoff: float = 30.0
    healthy_after: float = 60.0
    max_restarts: int = 10
    watched: list[Watched] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def watch(self, name: str, alive: Callable[[], bool], restart: Callable[[], object]) -> None:
        self.watched.append(Watched(name, alive, restart))

    def add(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> Child:
        child = Child(name, list(argv), dict(env if env is not None else os.environ))
        self.children.append(child)
        return child

    def start(self, child: Child) -> None:
        # process_group=0: the child leads a group of its own, which end_group() empties later.
        child.process = subprocess.Popen(
            child.argv, env=dict(child.env), preexec_fn=die_with_parent, process_group=0
        )
        child.started_at = time.monotonic()
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
        """Block until a stop is requested (or a child keeps crashing); stop everything; return a code.

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
                failed = self._tend()
                if failed is not None:
                    code = failed
                    self._stop.set()
        finally:
            self.stop_all()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        return code

    def _tend(self) -> int | None:
        """Restart what exited (after its backoff); an exit code when a child keeps crashing."""
        now = time.monotonic()
        for child in self.children:
            if child.restart_at is not None:
                if now >= child.restart_at:
                    child.restart_at = None
                    self.start(child)
                continue
            if child.process is None or child.process.poll() is None:
                continue
            code = child.process.returncode
            self._end_leftovers(child)
            ran = now - child.started_at
            child.crashes_in_a_row = 1 if ran >= self.healthy_after else child.crashes_in_a_row + 1
            if child.crashes_in_a_row > self.max_restarts:
                self.on_event(
                    f"{child.name} exited with code {code} {child.crashes_in_a_row} times in a row; stopping"
                )
                return code or 1
            delay = min(self.max_backoff, 2.0 ** (child.crashes_in_a_row - 1))
            child.restarts += 1
            child.restart_at = now + delay
            self.on_event(
                f"{child.name} exited with code {code} after {ran:.0f}s; restarting it in {delay:.0f}s "
                f"(restart {child.restarts})"
            )
        for item in self.watched:
            if not item.alive():
                item.restarts += 1
                self.on_event(f"{item.name} is not running; restarting it (restart {item.restarts})")
                try:
                    item.restart()
                except Exception as exc:  # reported, tried again on the next round
                    self.on_event(f"{item.name} did not restart: {exc}")
        return None

    def _end_leftovers(self, child: Child) -> None:
        """End what an exited child left running in its process group (announced when anything was)."""
        assert child.process is not None
        left = end_group(child.process.pid, self.grace_seconds)
        if left:
            pids = ", ".join(str(pid) for pid in left)
            self.on_event(f"{child.name} left {len(left)} processes running (pid {pids}); ended them")

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
            self._end_leftovers(child)
            self.on_event(f"stopped {child.name}")


def wait_until(check: Callable[[], bool], timeout: float, interval: float = 0.1) -> bool:
    """Poll ``check`` until it is true or ``timeout`` seconds pass; return whether it became true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return False


__all__ = ["Child", "Supervisor", "Watched", "wait_until"]
