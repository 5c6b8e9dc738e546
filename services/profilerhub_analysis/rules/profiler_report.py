"""ProfilerReport: every profiler rule at once; ``<Rule>_<param>`` parameters override one rule's
defaults (``CPUBottleneck_threshold=30``). IssuesFound when any rule found an issue."""

from __future__ import annotations

from typing import Any

from profilerhub_analysis.rules import (
    batch_size,
    cpu_bottleneck,
    dataloader,
    gpu_memory_increase,
    io_bottleneck,
    load_balancing,
    low_gpu_utilization,
    max_initialization_time,
    overall_system_usage,
    step_outlier,
)
from profilerhub_analysis.rules.base import (
    RuleData,
    RuleParamError,
    RuleResult,
    RuleSpec,
    RuleStatus,
    resolve,
)

NAME = "ProfilerReport"
MEMBERS = (
    low_gpu_utilization.SPEC,
    cpu_bottleneck.SPEC,
    io_bottleneck.SPEC,
    step_outlier.SPEC,
    batch_size.SPEC,
    dataloader.SPEC,
    gpu_memory_increase.SPEC,
    max_initialization_time.SPEC,
    overall_system_usage.SPEC,
    load_balancing.SPEC,
)


def split_overrides(params: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """``{"CPUBottleneck_threshold": 30}`` -> ``{"CPUBottleneck": {"threshold": 30}}`` (checked)."""
    out: dict[str, dict[str, Any]] = {spec.name: {} for spec in MEMBERS}
    for key, value in (params or {}).items():
        rule, sep, param = key.partition("_")
        if not sep or rule not in out:
            names = ", ".join(out)
            raise RuleParamError(
                f"ProfilerReport parameter {key!r} is not <Rule>_<param> for a rule of {names}"
            )
        out[rule][param] = value
    for spec in MEMBERS:
        resolve(spec.name, spec.params, out[spec.name])
    return out


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    overrides = split_overrides(params)
    children = [run(spec, data, overrides[spec.name]) for spec in MEMBERS]
    statuses = {c.status for c in children}
    found = [c.rule for c in children if c.status is RuleStatus.IssuesFound]
    failed = [c.rule for c in children if c.status is RuleStatus.Error and not c.missing_data]
    short = [c.rule for c in children if c.status is RuleStatus.Error and c.missing_data]
    if found:
        status, reason = RuleStatus.IssuesFound, "issues found by " + ", ".join(found)
    elif RuleStatus.InProgress in statuses:
        status, reason = RuleStatus.InProgress, "some rules wait for data"
    elif failed:  # the job's status rule (registry.overall_status), over the members
        status, reason = RuleStatus.Error, f"{', '.join(failed)} failed (each says how)"
    elif len(short) == len(children):
        status = RuleStatus.Error
        reason = "no rule could run: the job has none of the data they read (each rule says what)"
    else:
        status = RuleStatus.NoIssuesFound
        reason = "no rule found an issue" + (f" ({', '.join(short)}: no data)" if short else "")
    figures = {c.rule: c.status.value for c in children}
    missing = status is RuleStatus.Error and not failed
    return RuleResult(
        NAME, status, reason, dict(params), figures=figures, children=children, missing_data=missing
    )


def run(spec: RuleSpec, data: RuleData, given: dict[str, Any] | None) -> RuleResult:
    """One rule with ``given`` over its defaults; a bug in a rule is its ``Error``, never raised."""
    params = resolve(spec.name, spec.params, given)
    try:
        return spec.evaluate(data, params)
    except Exception as exc:  # a rule's bug must not take the others (or ingest) down
        return RuleResult(
            spec.name, RuleStatus.Error, f"the rule failed: {type(exc).__name__}: {exc}", params
        )


SPEC = RuleSpec.of(NAME, (), evaluate, __doc__)
