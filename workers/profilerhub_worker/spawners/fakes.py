"""Spawners that misbehave on purpose, for tests (after JupyterHub's ``never_spawn`` & co.).

They run real processes, so the worker, reconciler and timeouts are exercised for real; only
the app's behaviour is wrong.  Select one with
``PROFILERHUB_SPAWNER=profilerhub_worker.spawners.fakes:NeverSpawn``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import ClassVar

from profilerhub_worker.spawners.local import LocalProcessSpawner


class NeverSpawn(LocalProcessSpawner):
    """Starts a process that never binds a port nor answers: ``start`` must time out and clean up."""

    kind: ClassVar[str] = "local"

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(3600)"]


class SlowSpawn(LocalProcessSpawner):
    """Starts the real app, then takes ``PROFILERHUB_TEST_SLOW_SPAWN_SECONDS`` (default 3) more
    before reporting it started: the window in which a test kills the worker mid-spawn."""

    def start(self) -> str:
        endpoint = super().start()
        time.sleep(float(os.environ.get("PROFILERHUB_TEST_SLOW_SPAWN_SECONDS", "3")))
        return endpoint


class BadSpawn(LocalProcessSpawner):
    """Starts a process that exits at once with status 1: ``start`` must fail with a reason."""

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import sys; print('bad app: refusing to start'); sys.exit(1)"]
