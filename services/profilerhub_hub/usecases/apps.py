"""Apps: create, delete, open. One function per operation, called by REST, SageMaker and the console.

Each takes the door (``Door``) and the target its door resolved and authorized (``allow`` in REST,
``Call.allowed`` in SageMaker: the same ``authorize_resolved``), changes the records, writes the
operation's one audit row, commits, and enqueues the worker's task after the commit.
"""

from __future__ import annotations

from collections.abc import Sequence

from profilerhub_core.db.models import App, AppType
from profilerhub_core.records import apps, tags
from profilerhub_core.tasks import DELETE_APP, SPAWN_APP
from profilerhub_hub.audit import record_impersonated_opening
from profilerhub_hub.deps.targets import Resolved
from profilerhub_hub.permissions import Action, impersonator
from profilerhub_hub.proxy import presigned_app_url
from profilerhub_hub.usecases.door import Door


def app_label(target: Resolved, app: App) -> str:
    """How the audit log names an app: ``domain/user/app_type/app_name`` (its id in the detail)."""
    return f"{target.name}/{app.app_type.value}/{app.app_name}"


def create_app(
    door: Door,
    target: Resolved,
    app_type: AppType,
    app_name: str,
    *,
    tags_given: Sequence[tuple[str, str]] = (),
) -> App:
    """A Pending app of the target user (tagged with ``tags_given``), then ``SPAWN_APP``."""
    assert target.domain is not None and target.user is not None
    app = apps.create_user_app(door.session, target.domain, target.user, app_type, app_name)
    if tags_given:
        tags.add_tags(door.session, app, list(tags_given))
    door.commit(target, Action.CreateApp, app_label(target, app), detail={"app_id": app.id})
    door.send(SPAWN_APP, app.id)
    return app


def delete_app(door: Door, target: Resolved, app: App) -> App:
    """InService or Failed -> Deleting (``Conflict`` otherwise), then ``DELETE_APP``."""
    from_ = app.status.value
    app = apps.request_delete(door.session, app)
    detail = {"app_id": app.id, "from": from_, "to": app.status.value}
    door.commit(target, Action.DeleteApp, app_label(target, app), detail=detail)
    door.send(DELETE_APP, app.id)
    return app


def open_app(door: Door, target: Resolved, app: App, ttl: int) -> str:
    """The one-time URL that opens ``app`` for the caller (``OpenApp`` allowed by the door), valid
    ``ttl`` seconds: REST's presigned URL and SageMaker's ``CreatePresignedDomainUrl``. An opening
    by impersonation (a credential an administrator made for the owner, or an administrator's own
    where the domain allows it: SageMaker's portal pattern) is audited; the answer is committed."""
    caller = target.caller
    url = presigned_app_url(door.settings, caller, app, ttl)
    by = impersonator(caller, app.user_id)
    if by:
        record_impersonated_opening(door.session, by, target.name, app.id, door.via)
    door.session.commit()
    return url


__all__ = ["app_label", "create_app", "delete_app", "open_app"]
