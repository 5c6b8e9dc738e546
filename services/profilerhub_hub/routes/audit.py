"""``/audit``: the audit trail, filtered and paginated (newest first)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from pydantic import AwareDatetime

from profilerhub_core.db.models import AuditEvent
from profilerhub_core.records.audit import audit_query
from profilerhub_hub.deps import PageDep, Resolved, SessionDep, SettingsDep, allow
from profilerhub_hub.permissions import Action, visible_domain
from profilerhub_hub.routes.paths import api_router
from profilerhub_hub.schemas import AuditEventRead, Page

router = api_router(tags=["audit"])

NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f]*$"
Filter = Annotated[str | None, Query(max_length=300, pattern=NO_CONTROL_CHARACTERS)]


@router.get("/audit")
def read_audit(
    session: SessionDep,
    settings: SettingsDep,
    page: PageDep,
    target: Annotated[Resolved, allow(Action.ReadAudit)],
    domain: Filter = None,
    actor: Filter = None,
    action: Filter = None,
    target_type: Filter = None,
    target_name: Annotated[
        str | None, Query(alias="target", max_length=300, pattern=NO_CONTROL_CHARACTERS)
    ] = None,
    outcome: Filter = None,
    since: Annotated[
        AwareDatetime | None, Query(description="ISO 8601 with a time zone (Z or +hh:mm).")
    ] = None,
    until: Annotated[
        AwareDatetime | None, Query(description="ISO 8601 with a time zone (Z or +hh:mm).")
    ] = None,
) -> Page[AuditEventRead]:
    """Events matching every filter given. A domain administrator sees their own domain's only."""
    caller = target.caller
    filters = {
        "domain": domain,
        "actor": actor,
        "action": action,
        "target_type": target_type,
        "target": target_name,
        "outcome": outcome,
        "since": since,
        "until": until,
    }
    stmt = audit_query(**filters)  # type: ignore[arg-type]
    if visible_domain(caller) is not None:  # the audit log names domains: the caller's own, by name
        stmt = stmt.where(AuditEvent.domain == caller.domain_name)
    scope = "audit:" + caller.domain_id + ":" + repr(sorted((k, str(v)) for k, v in filters.items()))
    return page.fetch(session, stmt, [AuditEvent.id], AuditEventRead.of, scope=scope, descending=True)
