"""Domains: create, read, update settings, delete (only when empty)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from pydantic import ValidationError
from sqlalchemy.orm import Session

from profilerhub_core.db.models import SYSTEM_DOMAIN, Domain, DomainStatus, UserProfile, utcnow
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.errors import Conflict, InvalidInput, NotFound


def domain_not_found(name: str) -> NotFound:
    return NotFound(f"Domain '{name}' not found")


_DOMAIN_BY_NAME = sa.select(Domain).where(Domain.name == sa.bindparam("name"))


def get_domain(session: Session, name: str) -> Domain | None:
    return session.scalar(_DOMAIN_BY_NAME, {"name": name})


def require_domain(session: Session, name: str) -> Domain:
    domain = get_domain(session, name)
    if domain is None:
        raise domain_not_found(name)
    return domain


def _valid_settings(settings: dict[str, Any]) -> DomainSettings:
    """``settings`` as a whole (each key was checked on its own by the API; this checks them
    together, e.g. a request within its limit): ``InvalidInput`` when they do not fit."""
    try:
        return DomainSettings.model_validate(settings)
    except ValidationError as exc:
        reasons = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise InvalidInput(f"Domain settings refused: {reasons}") from None


def create_domain(session: Session, name: str, settings: dict[str, Any] | None = None) -> Domain:
    if get_domain(session, name) is not None:
        raise Conflict(f"Domain '{name}' already exists")
    effective = _valid_settings(settings or {})
    domain = Domain(name=name, status=DomainStatus.InService, settings=effective.model_dump())
    session.add(domain)
    session.flush()
    return domain


# The key of ``Domain.settings`` that holds what the SageMaker API accepts, stores and echoes but
# ProfilerHub has no use for (VPC, subnets, KMS keys, AuthMode...); never read as a setting.
AWS_FIELDS = "aws"


def update_domain(session: Session, domain: Domain, settings: dict[str, Any]) -> Domain:
    """Change the given settings keys; the others keep their values."""
    merged = DomainSettings.of(domain.settings).model_dump() | settings
    kept = {AWS_FIELDS: domain.settings[AWS_FIELDS]} if AWS_FIELDS in (domain.settings or {}) else {}
    domain.settings = _valid_settings(merged).model_dump() | kept
    domain.updated_at = utcnow()
    session.flush()
    return domain


def store_aws_fields(session: Session, domain: Domain, fields: dict[str, Any]) -> Domain:
    """Merge ``fields`` into the domain's stored SageMaker fields (``AWS_FIELDS``); flushed."""
    stored = dict((domain.settings or {}).get(AWS_FIELDS) or {})
    domain.settings = {**(domain.settings or {}), AWS_FIELDS: stored | fields}
    domain.updated_at = utcnow()
    session.flush()
    return domain


def aws_fields(domain: Domain) -> dict[str, Any]:
    return dict((domain.settings or {}).get(AWS_FIELDS) or {})


def delete_domain(session: Session, domain: Domain) -> None:
    if domain.name == SYSTEM_DOMAIN:
        raise InvalidInput(
            f"Domain '{SYSTEM_DOMAIN}' holds the platform administrators and cannot be deleted"
        )
    users = session.scalar(sa.select(sa.func.count()).where(UserProfile.domain_id == domain.id)) or 0
    if users:
        raise Conflict(f"Domain '{domain.name}' has {users} user profile(s); delete them first")
    session.delete(domain)
    session.flush()


def domains_query(domain_id: str | None = None) -> sa.Select[Domain]:
    """All domains, or only ``domain_id`` (what a domain member may list)."""
    stmt = sa.select(Domain)
    return stmt if domain_id is None else stmt.where(Domain.id == domain_id)


__all__ = [
    "AWS_FIELDS",
    "aws_fields",
    "create_domain",
    "delete_domain",
    "domain_not_found",
    "domains_query",
    "get_domain",
    "require_domain",
    "store_aws_fields",
    "update_domain",
]
