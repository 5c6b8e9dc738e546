"""MaxInitializationTime: the first step started more than ``threshold`` minutes after the job did."""

from __future__ import annotations

from typing import Any

from profilerhub_analysis.rules.base import (
    Finding,
    Param,
    RuleData,
    RuleResult,
    RuleSpec,
    RuleStatus,
    error,
    pct,
)

NAME = "MaxInitializationTime"
PARAMS = (Param("threshold", 20, 0, 1e6, description="minutes allowed before the first step"),)
RECOMMENDATION = (
    "Start training sooner: download or stream data instead of copying it all first, load the "
    "model once, and move one-off set-up out of the step loop's start."
)


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    if data.job_start_ns is None:
        return error(
            NAME, params, "no job start time: job.json has no start_ns (a plain torch.profiler upload)"
        )
    limit_ns = params["threshold"] * 60e9
    if not len(data.step_start_ns):
        waited = (data.job_end_ns or data.job_start_ns) - data.job_start_ns
        if waited > limit_ns:
            f = Finding(
                f"no step started within {params['threshold']:g} minutes",
                data.job_start_ns,
                data.job_end_ns,
                {"initialization_minutes": pct(waited / 60e9)},
            )
            return RuleResult(
                NAME, RuleStatus.IssuesFound, f.message, params, [f], dict(f.figures), {}, RECOMMENDATION
            )
        if not data.finished:
            return RuleResult(NAME, RuleStatus.InProgress, "waiting for the first step", params)
        return error(NAME, params, "no steps recorded: mark steps with ph.step")
    first = int(data.step_start_ns.min())
    minutes = (first - data.job_start_ns) / 60e9
    figures = {"initialization_minutes": pct(minutes), "source": data.step_source}
    if minutes <= params["threshold"]:
        return RuleResult(
            NAME, RuleStatus.NoIssuesFound, f"first step after {minutes:.2f} minutes", params, figures=figures
        )
    f = Finding(
        f"the first step started {minutes:.1f} minutes after the job (> {params['threshold']:g})",
        data.job_start_ns,
        first,
        figures,
    )
    return RuleResult(NAME, RuleStatus.IssuesFound, f.message, params, [f], figures, {}, RECOMMENDATION)


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
