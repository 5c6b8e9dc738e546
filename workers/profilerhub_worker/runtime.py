"""What a worker process's tasks work with, attached once to its Celery app.

    runtime = attach(celery, WorkerRuntime(settings=settings, apps=build_context(settings, celery)))
    runtime_of(task.app).apps          # WorkerContext: app lifecycle tasks
    runtime_of(task.app).ingest_context(send)   # IngestContext: built on first use from settings

One attribute (``celery.profilerhub``) instead of one per kind of task; a Celery app built without
one (``celery worker -A ...`` by hand) says how to run workers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from profilerhub_core.settings import Settings
    from profilerhub_worker.context import WorkerContext
    from profilerhub_worker.ingest import IngestContext

ATTRIBUTE = "profilerhub"


@dataclass
class WorkerRuntime:
    """The settings and contexts of one worker process."""

    settings: Settings | None = None
    """The worker's settings; ``None``: built from the environment when first needed."""
    apps: WorkerContext | None = None
    """For the app lifecycle tasks (database, Redis, spawner)."""
    ingest: IngestContext | None = None
    """For the ingest tasks (database, object store, limits); built on first use."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def app_context(self) -> WorkerContext:
        if self.apps is None:
            raise RuntimeError("this worker has no app context: run workers with `profilerhub worker`")
        return self.apps

    def ingest_context(self, send: Callable[..., None]) -> IngestContext:
        """This process's ingest context; ``send(task_name, *args)`` is how it sends work."""
        with self._lock:
            if self.ingest is None:
                from profilerhub_core.jobstorage import open_job_store
                from profilerhub_core.settings import Settings
                from profilerhub_worker.ingest import IngestContext

                settings = self.settings or Settings()
                self.ingest = IngestContext.from_settings(settings, open_job_store(settings), enqueue=send)
            return self.ingest


def attach(celery: Any, runtime: WorkerRuntime) -> WorkerRuntime:
    setattr(celery, ATTRIBUTE, runtime)
    return runtime


def runtime_of(celery: Any) -> WorkerRuntime:
    """The runtime attached to ``celery`` (an empty one, attached now, if there is none)."""
    runtime: WorkerRuntime | None = getattr(celery, ATTRIBUTE, None)
    if runtime is None:
        runtime = attach(celery, WorkerRuntime())
    return runtime


__all__ = ["WorkerRuntime", "attach", "runtime_of"]
