"""StepOutlier: steps much slower than the rest (duration above mean + ``stddev`` standard
deviations), triggered when there are more than ``n_outliers`` of them (SageMaker's defaults)."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import (
    Finding,
    Param,
    RuleData,
    RuleResult,
    RuleSpec,
    RuleStatus,
    Series,
    error,
    evidence,
    not_enough,
    pct,
)

NAME = "StepOutlier"
PARAMS = (
    Param("stddev", 3, 0, 1000, description="standard deviations above the mean that make a step an outlier"),
    Param("n_outliers", 10, 0, 1e9, integer=True, description="outliers tolerated before the rule triggers"),
)
RECOMMENDATION = (
    "Look at what the slow steps do differently in the timeline: checkpointing, evaluation, data "
    "loading stalls, garbage collection, or recompilation."
)


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    n = len(data.step_dur_ns)
    if not n:
        if not data.finished:
            return not_enough(NAME, data, params, "no steps yet")
        return error(
            NAME,
            params,
            "no steps recorded: mark steps with ph.step or profile with torch.profiler's schedule",
        )
    if n < 3:
        return not_enough(NAME, data, params, f"{n} step(s); a standard deviation needs at least 3")
    d = data.step_dur_ns.astype(np.float64) / 1e6
    mean, std = float(d.mean()), float(d.std())
    limit = mean + params["stddev"] * std
    out = np.flatnonzero(d > limit) if std > 0 else np.zeros(0, np.int64)
    figures = {
        "steps": n,
        "mean_ms": pct(mean),
        "stddev_ms": pct(std),
        "limit_ms": pct(limit),
        "max_ms": pct(d.max()),
        "outliers": int(len(out)),
        "source": data.step_source,
    }
    series = Series(data.step_start_ns, d)
    if len(out) <= params["n_outliers"]:
        reason = f"{len(out)} outlier step(s), not more than n_outliers {params['n_outliers']}"
        return RuleResult(NAME, RuleStatus.NoIssuesFound, reason, params, figures=figures)
    findings = [
        Finding(
            f"step {int(data.step_numbers[i])} took {d[i]:.1f} ms, above {limit:.1f} ms",
            int(data.step_start_ns[i]),
            int(data.step_start_ns[i] + data.step_dur_ns[i]),
            {"step": int(data.step_numbers[i]), "duration_ms": pct(d[i])},
            "step_duration_ms",
        )
        for i in out[np.argsort(-d[out], kind="stable")].tolist()
    ]
    reason = (
        f"{len(out)} outlier steps (> n_outliers {params['n_outliers']}); "
        f"slowest {d.max():.1f} ms vs mean {mean:.1f} ms"
    )
    return RuleResult(
        NAME,
        RuleStatus.IssuesFound,
        reason,
        params,
        findings,
        figures,
        {"step_duration_ms": evidence(series)},
        RECOMMENDATION,
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
