"""Domains: ``/domains`` and ``/domains/{domain}``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Response

from profilerhub_core.db.models import Domain
from profilerhub_core.records import domains
from profilerhub_hub.deps import PageDep, Resolved, SessionDep, allow
from profilerhub_hub.deps.door import DoorDep
from profilerhub_hub.permissions import Action, visible_domain
from profilerhub_hub.routes.paths import IN_DOMAIN, api_router
from profilerhub_hub.schemas import DomainCreate, DomainRead, DomainUpdate, Page
from profilerhub_hub.usecases import domains as domain_cases

router = api_router("/domains", tags=["domains"])


@router.post("", status_code=201)
def create_domain(
    body: DomainCreate, door: DoorDep, target: Annotated[Resolved, allow(Action.CreateDomain)]
) -> DomainRead:
    settings = body.settings.model_dump(exclude_none=True) if body.settings else None
    return DomainRead.of(domain_cases.create_domain(door, target, body.name, settings))


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
    body: DomainUpdate, door: DoorDep, target: Annotated[Resolved, allow(Action.UpdateDomainSettings)]
) -> DomainRead:
    """Change settings: a domain's administrators the everyday ones (``DOMAIN_ADMIN_SETTINGS``),
    platform administrators any."""
    changes = body.settings.model_dump(exclude_none=True)
    return DomainRead.of(domain_cases.update_domain(door, target, changes))


@router.delete("/{domain}", status_code=204, openapi_extra=IN_DOMAIN)
def delete_domain(door: DoorDep, target: Annotated[Resolved, allow(Action.DeleteDomain)]) -> Response:
    domain_cases.delete_domain(door, target)
    return Response(status_code=204)
