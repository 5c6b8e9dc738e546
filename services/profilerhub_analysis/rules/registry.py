"""The rules by name, configuration checks, and running a job's configured rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profilerhub_analysis.rules import model, profiler_report, tb_recommendations
from profilerhub_analysis.rules.base import (
    RuleData,
    RuleParamError,
    RuleResult,
    RuleSpec,
    RuleStatus,
    resolve,
)
from profilerhub_analysis.rules.limits import DEFAULT_RULES, MAX_RULES

RULES: dict[str, RuleSpec] = {
    spec.name: spec
    for spec in (*profiler_report.MEMBERS, profiler_report.SPEC, *tb_recommendations.MEMBERS, *model.MEMBERS)
}
"""The profiler rules, ProfilerReport (which runs them), the TensorBoard plugin's recommendations
(``rules.tb_recommendations``), then the model rules (``rules.model``)."""


def check_configs(configs: Sequence[Any]) -> list[dict[str, Any]]:
    """Normalised ``[{"rule", "parameters"}]``; ``RuleParamError`` naming the first bad entry.

    An entry is a rule name or ``{"rule": name, "parameters": {...}}``; names are unique.
    """
    if len(configs) > MAX_RULES:
        raise RuleParamError(f"at most {MAX_RULES} rules per job, not {len(configs)}")
    out: list[dict[str, Any]] = []
    for entry in configs:
        if isinstance(entry, str):
            entry = {"rule": entry}
        if (
            not isinstance(entry, dict)
            or set(entry) - {"rule", "parameters"}
            or not isinstance(entry.get("rule"), str)
        ):
            raise RuleParamError(
                f"a rule is a name or {{'rule': name, 'parameters': {{...}}}}, not {entry!r}"
            )
        name, given = entry["rule"], entry.get("parameters") or {}
        if name not in RULES:
            raise RuleParamError(f"unknown rule {name!r} (known: {', '.join(RULES)})")
        if not isinstance(given, dict):
            raise RuleParamError(f"{name}: parameters must be an object")
        if any(o["rule"] == name for o in out):
            raise RuleParamError(f"rule {name!r} is configured twice")
        if name == profiler_report.NAME:
            profiler_report.split_overrides(given)
        else:
            resolve(name, RULES[name].params, given)
        out.append({"rule": name, "parameters": dict(given)})
    return out


def evaluate_rules(configs: Sequence[Any], data: RuleData) -> list[dict[str, Any]]:
    """Each configured rule's result as JSON-ready dicts, in configuration order."""
    results: list[RuleResult] = []
    for config in check_configs(configs):
        spec = RULES[config["rule"]]
        if spec.name == profiler_report.NAME:
            try:
                results.append(spec.evaluate(data, config["parameters"]))
            except Exception as exc:
                results.append(
                    RuleResult(spec.name, RuleStatus.Error, f"the rule failed: {exc}", config["parameters"])
                )
        else:
            results.append(profiler_report.run(spec, data, config["parameters"]))
    return [r.to_dict() for r in results]


def overall_status(results: Sequence[dict[str, Any]]) -> str:
    """One word for a job's rules: IssuesFound beats InProgress beats Error beats NoIssuesFound.

    A rule that could not run for want of data (``missing_data``) is no error of the job's unless
    no rule could run at all: a CPU job's GPU rules do not make its rules "Error"."""
    statuses = {r["status"] for r in results if not r.get("missing_data")}
    for s in ("IssuesFound", "InProgress", "Error"):
        if s in statuses:
            return s
    return "NoIssuesFound" if statuses or not results else "Error"


__all__ = ["DEFAULT_RULES", "MAX_RULES", "RULES", "check_configs", "evaluate_rules", "overall_status"]
