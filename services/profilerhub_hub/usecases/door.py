"""What a use case is given by the door that calls it: ``Door``, and the one way an operation commits.

REST builds its door per request (``deps.DoorDep``), the SageMaker endpoint per call
(``sagemaker.operations.Call.door``), the console per page step; each through ``door_of``, the
one place that reads the hub's wiring. A use case then changes records, writes its operation's
audit row and commits with ``Door.commit`` (once), and sends worker tasks after that commit with
``Door.send``:

    door.commit(target, Action.CreateApp, name, detail={"app_id": app.id})
    door.send(SPAWN_APP, app.id)

Every audit row an operation writes says which door it came through (``detail["via"]``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy.orm import Session

from profilerhub_core.settings import Settings
from profilerhub_core.storage import ObjectStore
from profilerhub_hub import job_uploads
from profilerhub_hub.audit import commit_audited
from profilerhub_hub.deps.targets import Resolved
from profilerhub_hub.permissions import Action
from profilerhub_hub.services import HubServices

Via = str
"""The door: ``api`` (REST, ``/api/v1``, which the console's pages call too), an AWS door by its
model's name (``sagemaker``, ``cloudwatch``: ``sagemaker.endpoint.SERVICES``), ``console``
(the console's own server-side steps: sign-in links, first sign-in), or ``app`` (a profiler app
acting for its owner with its request's token: ``routes.app_owner``)."""


class TaskQueue(Protocol):
    """Sends a worker task by name with one id (``profilerhub_hub.tasks.TaskSender``)."""

    def send(self, task_name: str, object_id: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Door:
    """The session of the request, the hub's settings and services, and which door it came through."""

    session: Session
    settings: Settings
    via: Via
    tasks: TaskQueue
    open_store: Callable[[], ObjectStore]
    """The hub's object store, opened on first use."""

    def commit(
        self,
        target: Resolved,
        action: Action,
        name: str,
        *,
        domain: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Write the operation's one audit row (``action`` on ``name``) and commit it with the change."""
        detail = {**(detail or {}), "via": self.via}
        commit_audited(self.session, target, action, name, domain=domain, detail=detail)

    def send(self, task_name: str, object_id: str) -> None:
        """Send a worker task after the commit (with the id only; a lost send is the reconciler's)."""
        self.tasks.send(task_name, object_id)

    def delete_owned(self, prefix: str, owner: str) -> None:
        """After the commit that removed its row: remove what a job, user or domain had in storage."""
        job_uploads.delete_owned(self.open_store, prefix, owner)


def door_of(hub: HubServices, session: Session, via: Via) -> Door:
    """The door onto the hub wired from ``hub`` (``create_app``'s services), for one request's ``session``."""
    return Door(session, hub.settings, via, hub.app_tasks, lambda: hub.storage)


__all__ = ["Door", "TaskQueue", "Via", "door_of"]
