"""Domains: ``/domains`` and ``/domains/{domain}``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request, Response

from profilerhub_core.db.models import Domain
from profilerhub_core.domain_settings import DOMAIN_ADMIN_SETTINGS
from profilerhub_core.records import domains
from profilerhub_core.storage import layout
from profilerhub_hub import job_uploads
from profilerhub_hub.audit import commit_audited
from profilerhub_hub.deps import PageDep, Resolved, SessionDep, allow
from profilerhub_hub.deps.targets import authorize_resolved
from profilerhub_hub.permissions import Action, visible_domain
from profilerhub_hub.routes.paths import IN_DOMAIN
from profilerhub_hub.schemas import DomainCreate, DomainRead, DomainUpdate, Page

router = APIRouter(prefix="/domains", tags=["domains"])


@router.post("", status_code=201)
def create_domain(
    body: DomainCreate, session: SessionDep, target: Annotated[Resolved, allow(Action.CreateDomain)]
) -> DomainRead:
    settings = body.settings.model_dump(exclude_none=True) if body.settings else None
    domain = domains.create_domain(session, body.name, settings)
    commit_audited(session, target, Action.CreateDomain, domain.name, domain=domain.name,
                   detail={"settings": domain.settings})  # fmt: skip
    return DomainRead.of(domain)


@router.get("")
def list_domains(
    session: SessionDep, page: PageDep, target: Annotated[Resolved, allow(Action.ListDomains)]
) -> Page[DomainRead]:
    stmt = domains.domains_query(visible_domain(target.caller))
    return page.fetch(session, stmt, [Domain.name], DomainRead.of, scope="domains")


@router.get("/{domain}", openapi_extra=IN_DOMAIN)
async def describe_domain(target: Annotated[Resolved, allow(Action.DescribeDomain)]) -> DomainRead:
    assert target.domain is not None
    return DomainRead.of(target.domain)


@router.patch("/{domain}", openapi_extra=IN_DOMAIN)
def update_domain(
    body: DomainUpdate, session: SessionDep, target: Annotated[Resolved, allow(Action.UpdateDomainSettings)]
) -> DomainRead:
    """Change settings: a domain's administrators the everyday ones (``DOMAIN_ADMIN_SETTINGS``),
    platform administrators any."""
    assert target.domain is not None
    changes = body.settings.model_dump(exclude_none=True)
    action = Action.UpdateDomainSettings
    if not set(changes) <= DOMAIN_ADMIN_SETTINGS:
        action = Action.UpdateDomain
        authorize_resolved(session, target, action, read_only=False)
    domain = domains.update_domain(session, target.domain, changes)
    commit_audited(session, target, action, domain.name, detail={"changes": changes})
    return DomainRead.of(domain)


@router.delete("/{domain}", status_code=204, openapi_extra=IN_DOMAIN)
def delete_domain(
    request: Request, session: SessionDep, target: Annotated[Resolved, allow(Action.DeleteDomain)]
) -> Response:
    assert target.domain is not None
    name, prefix = target.domain.name, layout.domain_prefix(target.domain.id)
    domains.delete_domain(session, target.domain)
    commit_audited(session, target, Action.DeleteDomain, name)
    job_uploads.delete_owned(request.app.state, prefix, f"domain {name}")
    return Response(status_code=204)
