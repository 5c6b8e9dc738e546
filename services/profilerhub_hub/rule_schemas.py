"""Rules in the jobs API: the configuration a job or domain takes (checked by the analysis
engine's ``check_configs``), the rules a run stops on (``StopOn``) and ``RulesRead``, what
``GET …/jobs/{job_id}/rules`` answers."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field
from sqlalchemy.orm import Session

from profilerhub_analysis.rules.limits import DEFAULT_RULES, MAX_RULES
from profilerhub_core.db.models import Domain, Job
from profilerhub_core.domain_settings import DomainSettings


def _checked(value: list[Any]) -> list[dict[str, Any]]:
    from profilerhub_analysis.rules.registry import RuleParamError, check_configs  # numpy: not at start

    try:
        return check_configs(value)
    except RuleParamError as exc:
        raise ValueError(str(exc)) from exc


RuleConfigs = Annotated[
    list[str | dict[str, Any]],
    Field(max_length=MAX_RULES, description='Rule names or {"rule", "parameters"} (docs/rules.md).'),
    AfterValidator(_checked),
]


def _known_names(value: list[str]) -> list[str]:
    from profilerhub_analysis.rules.registry import RULES  # numpy: not at the hub's start

    unknown = [name for name in value if name not in RULES]
    if unknown:
        raise ValueError(f"unknown rule(s) {', '.join(map(repr, unknown))}; known: {', '.join(RULES)}")
    return list(dict.fromkeys(value))


StopOn = Annotated[
    list[Annotated[str, Field(max_length=64)]],
    Field(max_length=MAX_RULES, description="Rule names whose IssuesFound asks the run to stop."),
    AfterValidator(_known_names),
]


class RulesRead(BaseModel):
    job_id: str
    status: str = Field(description="IssuesFound, InProgress, Error or NoIssuesFound over all rules.")
    final: bool = Field(description="False while the job runs (results on what has streamed so far).")
    evaluated_at: str | None
    configured: list[dict[str, Any]] = Field(description="The rules the job runs (its own or its domain's).")
    rules: list[dict[str, Any]] = Field(description="Each rule's status, reason, parameters and findings.")


def configured_rules(session: Session, job: Job) -> list[dict[str, Any]]:
    """What the job runs: its own rules, else its domain's, else ProfilerReport."""
    if job.rules:
        return list(job.rules)
    domain = session.get(Domain, job.domain_id)
    return list(DomainSettings.of(domain.settings if domain else None).rules) or list(DEFAULT_RULES)


def rules_read(job_id: str, configured: list[dict[str, Any]], results: dict[str, Any] | None) -> RulesRead:
    """The answer for a job: its stored results, or every configured rule InProgress."""
    if not results:
        pending = [
            {"rule": c["rule"], "status": "InProgress", "reason": "not evaluated yet",
             "parameters": c.get("parameters", {}), "findings": [], "finding_count": 0}
            for c in configured
        ]  # fmt: skip
        return RulesRead(job_id=job_id, status="InProgress", final=False, evaluated_at=None,
                         configured=configured, rules=pending)  # fmt: skip
    return RulesRead(
        job_id=job_id,
        status=results.get("status", "InProgress"),
        final=bool(results.get("final")),
        evaluated_at=results.get("evaluated_at"),
        configured=configured,
        rules=list(results.get("rules") or []),
    )


__all__ = ["RuleConfigs", "RulesRead", "configured_rules", "rules_read"]
