"""Domains: create, update, delete. Called by REST (``routes/domains.py``) and SageMaker alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profilerhub_core.db.models import Domain
from profilerhub_core.domain_settings import DOMAIN_ADMIN_SETTINGS
from profilerhub_core.records import domains, tags
from profilerhub_core.storage import layout
from profilerhub_hub.deps.targets import Resolved, authorize_resolved
from profilerhub_hub.permissions import Action
from profilerhub_hub.usecases.door import Door


def create_domain(
    door: Door,
    target: Resolved,
    name: str,
    settings: dict[str, Any] | None = None,
    *,
    aws_fields: dict[str, Any] | None = None,
    tags_given: Sequence[tuple[str, str]] = (),
) -> Domain:
    """A new domain with ``settings`` (SageMaker's: the ``aws_fields`` it stores and echoes, its tags)."""
    domain = domains.create_domain(door.session, name, settings)
    if aws_fields is not None:
        domain = domains.store_aws_fields(door.session, domain, aws_fields)
    if tags_given:
        tags.add_tags(door.session, domain, list(tags_given))
    door.commit(
        target, Action.CreateDomain, domain.name, domain=domain.name, detail={"settings": domain.settings}
    )
    return domain


def update_domain(
    door: Door, target: Resolved, changes: dict[str, Any], *, aws_fields: dict[str, Any] | None = None
) -> Domain:
    """Change settings: a domain's administrators the everyday ones (``DOMAIN_ADMIN_SETTINGS``),
    platform administrators any, and SageMaker's stored fields (``aws_fields``)."""
    assert target.domain is not None
    action = Action.UpdateDomainSettings
    if aws_fields is not None or not set(changes) <= DOMAIN_ADMIN_SETTINGS:
        action = Action.UpdateDomain
        authorize_resolved(door.session, target, action)
    domain = domains.update_domain(door.session, target.domain, changes) if changes else target.domain
    detail: dict[str, Any] = {"changes": changes}
    if aws_fields is not None:
        domain = domains.store_aws_fields(door.session, domain, aws_fields)
        detail["stored"] = sorted(aws_fields)
    door.commit(target, action, domain.name, detail=detail)
    return domain


def delete_domain(door: Door, target: Resolved) -> None:
    """Delete an empty domain (``Conflict`` while it has user profiles), then its storage."""
    assert target.domain is not None
    name, prefix = target.domain.name, layout.domain_prefix(target.domain.id)
    domains.delete_domain(door.session, target.domain)
    door.commit(target, Action.DeleteDomain, name)
    door.delete_owned(prefix, f"domain {name}")


__all__ = ["create_domain", "delete_domain", "update_domain"]
