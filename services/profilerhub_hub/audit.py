"""The one way a request commits a change: together with its audit event, atomically.

    commit_audited(session, target, Action.CreateJob, job.id, detail={...})
    commit_refused(session, target, Action.CreateJob, reason)      # deps.allow, on AccessDenied
    record_impersonated_opening(session, by, as_actor, app_id, via)  # OpenApp by impersonation

The audit record's ``target_type`` follows from the action (``TARGET_TYPES``), its ``domain`` from
the request's target; the request's own transaction steps (``deps.session.request_step``) are the
only other place the hub's routes commit.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from profilerhub_core.records import audit
from profilerhub_hub.permissions import MUTATING, Action, Resolved

# What each changing action acts on, as the audit log names it.
TARGET_TYPES: dict[Action, str] = {
    Action.CreateDomain: "Domain",
    Action.UpdateDomain: "Domain",
    Action.UpdateDomainSettings: "Domain",
    Action.DeleteDomain: "Domain",
    Action.CreateUserProfile: "UserProfile",
    Action.UpdateUserProfile: "UserProfile",
    Action.DeleteUserProfile: "UserProfile",
    Action.CreateToken: "ApiToken",
    Action.DeleteToken: "ApiToken",
    Action.CreatePresignedSignInUrl: "UserProfile",
    Action.CreateInvitation: "Invitation",
    Action.DeleteInvitation: "Invitation",
    Action.UpdatePassword: "UserProfile",
    Action.UpdateTwoFactor: "UserProfile",
    Action.CreateApp: "App",
    Action.UpdateApp: "App",
    Action.DeleteApp: "App",
    Action.CreateJob: "Job",
    Action.CompleteJob: "Job",
    Action.UploadJobFile: "Job",
    Action.DeleteJob: "Job",
    Action.StopJob: "Job",
    Action.UpdateJob: "Job",
    Action.CreateWebhook: "Webhook",
    Action.DeleteWebhook: "Webhook",
}
if set(TARGET_TYPES) != MUTATING:  # checked when the module loads, like permissions.RULES
    raise RuntimeError(f"audit.TARGET_TYPES and permissions.MUTATING differ: {set(TARGET_TYPES) ^ MUTATING}")


def commit_audited(
    session: Session,
    target: Resolved,
    action: Action,
    name: str,
    *,
    domain: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Record that the caller did ``action`` to ``name`` and commit it with the change.

    ``domain`` defaults to the target's (a new domain names itself)."""
    audit.record_audit(
        session,
        actor=target.caller.actor,
        action=action.value,
        target_type=TARGET_TYPES[action],
        target=name,
        domain=domain if domain is not None else (target.domain.name if target.domain else None),
        detail=detail,
    )
    session.commit()


def commit_refused(session: Session, target: Resolved, action: Action, reason: str) -> None:
    """Record that the caller was refused ``action`` on the request's target, and commit that alone."""
    audit.record_audit(
        session,
        actor=target.caller.actor,
        action=action.value,
        target_type=target.kind,
        target=target.name,
        domain=target.domain.name if target.domain else None,
        outcome=audit.DENIED,
        detail={"reason": reason},
    )
    session.commit()


def record_impersonated_opening(session: Session, by: str, as_actor: str, app_id: str, via: str) -> None:
    """The audit row of an app opened by someone with a credential they made for its owner, through
    any door (a presigned URL, a console sign-in link, the proxy with such a token). Flushed; the
    caller commits. (Opening is no change: only an opening by impersonation is audited.)"""
    audit.record_audit(
        session, actor=by, action=Action.OpenApp.value, target_type="App", target=app_id,
        domain=as_actor.partition("/")[0], detail={"impersonation": True, "as": as_actor, "via": via},
    )  # fmt: skip


def record_refused_opening(
    session: Session, actor: str, owner: str, app_id: str, reason: str, via: str
) -> None:
    """The audit row of a refused attempt to open ``owner``'s app where the door has no resolved
    target (the proxy, with a token). Flushed; the caller commits."""
    audit.record_audit(
        session, actor=actor, action=Action.OpenApp.value, target_type="App", target=app_id,
        domain=owner.partition("/")[0], outcome=audit.DENIED,
        detail={"reason": reason, "via": via, "owner": owner},
    )  # fmt: skip


__all__ = [
    "TARGET_TYPES",
    "commit_audited",
    "commit_refused",
    "record_impersonated_opening",
    "record_refused_opening",
]
