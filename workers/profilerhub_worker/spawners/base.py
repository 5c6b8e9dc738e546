"""The spawner interface: start, poll and stop one profiler app instance.

After JupyterHub's ``Spawner``.  One spawner object stands for one app instance.  It is built
from the app's ``AppSpec`` and the operator's ``SpawnerConfig``; a worker that did not start
the instance (another worker, or the same one after a restart) rebuilds it and calls
``load_state`` with the JSON blob saved on the app row, and can then poll or stop it.

The lifecycle, as the worker tasks drive it::

    spawner = make_spawner(spec, config)
    spawner.load_state(row.spawner_state)      # {} for a new app
    endpoint = spawner.start()                 # blocks until the app answers its health check
    row.spawner_state = spawner.get_state()    # saved at once, so nothing lives only in memory
    ...
    status = spawner.poll()                    # None while running, else why it is not
    spawner.stop()                             # idempotent; stopping nothing is fine

Every method is synchronous (workers are Celery tasks) and safe to call again after a crash
part-way through: ``start`` on an instance that already runs returns its endpoint, ``stop`` on
one that is gone does nothing.  A Kubernetes spawner implements the same methods with a
Deployment + Service as the instance and their names in the state.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

STATE_VERSION_KEY = "version"


class SpawnError(Exception):
    """The instance could not be started; ``reason`` is stored as the app's ``failure_reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class AppSpec:
    """What a spawner needs to know about the app it runs (built from the app row)."""

    app_id: str
    domain: str
    user: str
    user_id: str
    app_type: str
    app_name: str
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment for the instance: hub URL, public key, ... (see the app's settings)."""


@dataclass(frozen=True)
class SpawnerConfig:
    """Operator settings every spawner understands."""

    home: Path
    """Where instances keep their files (the local spawner writes logs and port files here)."""
    start_timeout: float = 30.0
    """Seconds from asking for an instance to it running (process started, pod scheduled)."""
    http_timeout: float = 30.0
    """Seconds from the instance running to its health endpoint's first 200."""
    stop_grace: float = 5.0
    """Seconds between the polite stop (SIGTERM) and the forced one (SIGKILL)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Backend-specific settings (the Kubernetes spawner's namespace, image, resources, ...)."""


class Spawner(abc.ABC):
    """Base class of spawners.  Subclasses implement ``start``, ``poll`` and ``stop``, and
    ``list_instances`` where the backend can list what it runs (the orphan sweep needs it).

    ``poll`` meaning, as in JupyterHub: ``None`` means the instance is running (it may not
    answer HTTP yet); anything else means it is not running, and the value says why: an ``int``
    exit status where the backend knows one, or a short human-readable ``str`` reason (for
    example ``"process 123 is gone"``).  An instance that was never started polls as not
    running (``0``).
    """

    kind: ClassVar[str] = "base"
    state_version: ClassVar[int] = 1

    def __init__(self, spec: AppSpec, config: SpawnerConfig) -> None:
        self.spec = spec
        self.config = config

    # -- lifecycle ---------------------------------------------------------------------------

    @abc.abstractmethod
    def start(self) -> str:
        """Start the instance; return its endpoint (``http://host:port``) once it answers health.

        Raises ``SpawnError`` on failure or timeout, after cleaning up what it started.
        """
        raise NotImplementedError

    @abc.abstractmethod
    def poll(self) -> int | str | None:
        """``None`` if the instance runs; otherwise its exit status or the reason it is not running."""
        raise NotImplementedError

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the instance and wait until it is gone.  Stopping an absent instance is not an error."""
        raise NotImplementedError

    # -- state -------------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        """A JSON-safe dict that lets another spawner object find this instance again."""
        return {STATE_VERSION_KEY: self.state_version, "kind": self.kind}

    def load_state(self, state: dict[str, Any] | None) -> None:  # noqa: B027 (optional hook)
        """Restore what ``get_state`` returned.  Unknown versions or kinds are ignored (fresh state)."""

    def state_matches(self, state: dict[str, Any] | None) -> bool:
        """True if ``state`` was written by this kind of spawner at this state version."""
        if not state:
            return False
        return state.get("kind") == self.kind and state.get(STATE_VERSION_KEY) == self.state_version

    @classmethod
    def instance_identity(cls, state: dict[str, Any] | None) -> object:
        """What identifies the instance a state describes (two states with equal identities
        describe one instance, even if one was saved before its port was known)."""
        return sorted((state or {}).items())

    def clear_state(self) -> None:  # noqa: B027 (optional hook)
        """Forget the instance (after it is stopped)."""

    # -- the reconciler's view ---------------------------------------------------------------

    @classmethod
    def list_instances(cls, config: SpawnerConfig) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(app_id, state)`` of every instance this backend runs for this installation,
        whether or not an app row owns it.  The base lists nothing (no orphan sweep)."""
        return iter(())

    @classmethod
    def orphan(cls, app_id: str, config: SpawnerConfig, state: dict[str, Any]) -> Spawner:
        """A spawner for an instance found by ``list_instances``, enough to poll and stop it
        (its spec knows only the app id: no row may own it any more)."""
        spawner = cls(
            AppSpec(app_id=app_id, domain="", user="", user_id="", app_type="", app_name=""), config
        )
        spawner.load_state(state)
        return spawner


def wait_for(
    check: Callable[[], bool], timeout: float, interval: float = 0.02, max_interval: float = 0.25
) -> bool:
    """Call ``check`` until it returns True or ``timeout`` seconds pass; back off gently."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
        interval = min(interval * 1.5, max_interval)
