"""Spawners that misbehave on purpose, for tests (after JupyterHub's ``never_spawn`` & co.).

They run real processes, so the worker, reconciler and timeouts are exercised for real; only
the app's behaviour is wrong.  Select one with
``PROFILERHUB_SPAWNER=profilerhub_worker.spawners.fakes:NeverSpawn``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import ClassVar

from profilerhub_worker.spawners.base import wait_for
from profilerhub_worker.spawners.local import LocalProcessSpawner


class NeverSpawn(LocalProcessSpawner):
    """Starts a process that never binds a port nor answers: ``start`` must time out and clean up."""

    kind: ClassVar[str] = "local"

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(3600)"]


class SlowSpawn(LocalProcessSpawner):
    """Starts the real app, then holds before reporting it started: the window in which a test kills
    the worker (or its Redis) mid-spawn.

    It holds ``PROFILERHUB_TEST_SLOW_SPAWN_SECONDS`` (default 3), or less: where
    ``PROFILERHUB_TEST_SPAWN_GATE`` names a folder, until the file named for the app's id appears in
    it, so a test opens the gate once it has done its harm instead of sleeping out the window."""

    def start(self) -> str:
        endpoint = super().start()
        gates = os.environ.get("PROFILERHUB_TEST_SPAWN_GATE")
        opened = (lambda: (Path(gates) / self.app_id).exists()) if gates else (lambda: False)
        wait_for(opened, float(os.environ.get("PROFILERHUB_TEST_SLOW_SPAWN_SECONDS", "3")))
        return endpoint


class BadSpawn(LocalProcessSpawner):
    """Starts a process that exits at once with status 1: ``start`` must fail with a reason."""

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import sys; print('bad app: refusing to start'); sys.exit(1)"]
