"""A job's rules at ingest: which it runs (its own, else its domain's defaults, else
ProfilerReport) and how their results are stamped (stored by ``write.put_rules`` and on the row)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from profilerhub_core.db.models import Domain, Job, utcnow
from profilerhub_core.domain_settings import DomainSettings


def job_rules(session: Session, job: Job) -> list[Any] | None:
    """The job's configured rules, else its domain's ``rules`` setting; None = the default."""
    if job.rules:
        return list(job.rules)
    domain = session.get(Domain, job.domain_id)
    configured = DomainSettings.of(domain.settings if domain else None).rules
    return list(configured) or None


def stamped(results: dict[str, Any]) -> dict[str, Any]:
    return results | {"evaluated_at": utcnow().isoformat()}


__all__ = ["job_rules", "stamped"]
