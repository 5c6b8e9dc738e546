"""Spawners that misbehave on purpose, for tests (after JupyterHub's ``never_spawn`` & co.).

They run real processes, so the worker, reconciler and timeouts are exercised for real; only
the app's behaviour is wrong.  Select one with
``PROFILERHUB_SPAWNER=profilerhub_worker.spawners.fakes:NeverSpawn``.
"""

from __future__ import annotations

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
    """Takes ``delay`` seconds before starting the real app (a slow image pull, a busy node)."""

    delay: ClassVar[float] = 3.0

    def start(self) -> str:
        time.sleep(self.delay)
        return super().start()


class BadSpawn(LocalProcessSpawner):
    """Starts a process that exits at once with status 1: ``start`` must fail with a reason."""

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import sys; print('bad app: refusing to start'); sys.exit(1)"]
