"""``up``'s supervisor ends what a crashed child left behind before restarting it: a grandchild
(a killed hub's uvicorn worker) is not orphaned holding the port."""

from __future__ import annotations

import signal
import socket
import sys
from pathlib import Path

import psutil

from profilerhub_stack.supervisor import Supervisor
from tests.support.hub import wait_for

# The child starts a grandchild that listens on a port (as uvicorn's workers do), then waits.
CHILD = """
import subprocess, sys
grandchild = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
open(sys.argv[3], "w").write(str(grandchild.pid))
grandchild.wait()
"""
GRANDCHILD = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
while True:
    time.sleep(60)
"""


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_a_child_killed_with_sigkill_has_its_process_group_ended_before_the_restart(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pid_file = tmp_path / "grandchild"
    events: list[str] = []
    sup = Supervisor(on_event=events.append, grace_seconds=5)
    child = sup.add("hub", [sys.executable, "-c", CHILD, GRANDCHILD, str(port), str(pid_file)])
    sup.start_all()
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text() != "" and not _port_free(port),
                 "the grandchild listening", 60)  # fmt: skip
        grandchild = psutil.Process(int(pid_file.read_text()))
        assert child.process is not None
        first = child.process
        first.send_signal(signal.SIGKILL)
        first.wait()
        assert grandchild.is_running()  # orphaned, still holding the port, until the supervisor looks
        sup._tend()  # what wait() does every 0.2 s
        assert not grandchild.is_running() or grandchild.status() == psutil.STATUS_ZOMBIE
        assert _port_free(port)
        assert any(f"hub left 1 processes running (pid {grandchild.pid}); ended them" in e for e in events), (
            events
        )
        assert any("hub exited with code -9" in e for e in events), events
    finally:
        sup.stop_all()
