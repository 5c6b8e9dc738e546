"""The spawner interface: start, poll and stop one profiler app instance.

After JupyterHub's ``Spawner``.  One spawner object stands for one app instance.  It is built
from the app's ``AppSpec`` and the operator's ``SpawnerConfig``; a worker that did not start
the instance (another worker, or the same one after a restart) rebuilds it and calls
``load_state`` with the JSON blob saved on the app row, and can then poll or stop it.

The lifecycle, as the worker tasks drive it (``profilerhub_worker.lifecycle``)::

    spawner = make_spawner(settings.spawner, spec, config, row.spawner_state)  # state {} when new
    endpoint = spawner.start()                 # blocks until the app answers its health check
    row.spawner_state = spawner.get_state()    # saved at once, so nothing lives only in memory
    ...
    status = spawner.poll()                    # None while running, else why it is not
    spawner.stop()                             # idempotent; stopping nothing is fine

and the reconciler, for instances no app row owns any more::

    for app_id, state in cls.list_instances(config):   # what this backend may have left running
        if <no live row owns that instance>:
            cls.found(app_id, config, state).stop()      # no AppSpec: it can poll and stop only

A subclass implements ``start``, ``poll``, ``stop``, ``get_state``/``load_state`` and the class
method ``list_instances``; ``make_spawner`` and ``spawner_class`` (in ``spawners/__init__.py``)
build one from a setting (``local`` or ``module:Class``).

Every method is synchronous (workers are Celery tasks) and safe to call again after a crash
part-way through: ``start`` on an instance that already runs returns its endpoint, ``stop`` on
one that is gone does nothing.  A Kubernetes spawner implements the same methods with a
Deployment + Service as the instance and their names in the state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

STATE_VERSION_KEY = "version"


def app_arguments(app_type: str) -> list[str]:
    """What follows ``profilerhub app`` (or ``python -m profilerhub_app``) to run ``app_type``:
    nothing for the profiler app, ``--type TensorBoard`` for TensorBoard. Every spawner uses it."""
    return [] if app_type == "DetailedProfiler" else ["--type", app_type]


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
    resources: dict[str, str] = field(default_factory=dict)
    """CPU and memory the owner's domain sets for its apps (``cpu_request``, ``cpu_limit``,
    ``memory_request``, ``memory_limit``: Kubernetes quantities); the rest are the operator's."""


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
    """Backend-specific settings (the Kubernetes spawner's ``k8s_*``: namespace, image, resources...)."""


class Spawner:
    """Base class of spawners.  Subclasses implement ``start``, ``poll`` and ``stop``.

    ``poll`` meaning, as in JupyterHub: ``None`` means the instance is running (it may not
    answer HTTP yet); anything else means it is not running, and the value says why: an ``int``
    exit status where the backend knows one, or a short human-readable ``str`` reason (for
    example ``"process 123 is gone"``).  An instance that was never started polls as not
    running (``0``).
    """

    kind: ClassVar[str] = "base"
    state_version: ClassVar[int] = 1

    def __init__(self, spec: AppSpec | None, config: SpawnerConfig, *, app_id: str | None = None) -> None:
        """``spec``: the app to run. ``None`` only for an instance ``list_instances`` found, which
        may have no app row behind it: build those with ``found``; they can ``poll`` and ``stop``,
        not ``start``."""
        if spec is not None:
            app_id = spec.app_id
        if app_id is None:
            raise TypeError("a spawner needs the AppSpec of its app, or the app_id of an instance it found")
        self.spec = spec
        self.app_id: str = app_id
        self.config = config

    @classmethod
    def found(cls, app_id: str, config: SpawnerConfig, state: dict[str, Any] | None) -> Spawner:
        """A spawner for an instance ``list_instances`` reported (with that state loaded)."""
        spawner = cls(None, config, app_id=app_id)
        spawner.load_state(state)
        return spawner

    @classmethod
    def list_instances(cls, config: SpawnerConfig) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(app_id, state)`` of every instance of this kind that may be running for ``config``,
        whether or not an app row still owns it; the reconciler stops those no live row owns.

        Part of the contract: a backend lists by what it named its instances (the local spawner
        by its instance files, Kubernetes by a label selector).
        """
        raise NotImplementedError

    def require_spec(self) -> AppSpec:
        """The spec of the app to start (``start`` needs one; a found instance has none)."""
        if self.spec is None:
            raise RuntimeError(f"instance {self.app_id} was found, not spawned: it can be stopped only")
        return self.spec

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> str:
        """Start the instance; return its endpoint (``http://host:port``) once it answers health.

        Raises ``SpawnError`` on failure or timeout, after cleaning up what it started.
        """
        raise NotImplementedError

    def poll(self) -> int | str | None:
        """``None`` if the instance runs; otherwise its exit status or the reason it is not running."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop the instance and wait until it is gone.  Stopping an absent instance is not an error."""
        raise NotImplementedError

    # -- state -------------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        """A JSON-safe dict that lets another spawner object find this instance again."""
        return {STATE_VERSION_KEY: self.state_version, "kind": self.kind}

    def load_state(self, state: dict[str, Any] | None) -> None:
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

    def clear_state(self) -> None:
        """Forget the instance (after it is stopped)."""


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
