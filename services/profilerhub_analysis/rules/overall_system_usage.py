"""OverallSystemUsage: p50, p95, p99 and max of every system metric (CPU, memory, disk, network,
each GPU). Like SageMaker's, it reports and never triggers."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import RuleData, RuleResult, RuleSpec, RuleStatus, error, not_enough, pct

NAME = "OverallSystemUsage"
PARAMS = ()


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    if not data.system:
        if not data.finished:
            return not_enough(NAME, data, params, "no system samples yet")
        return error(
            NAME,
            params,
            "no system samples: the job has no system/*.jsonl.gz (a plain torch.profiler upload)",
        )
    figures: dict[str, Any] = {}
    for name, series in sorted(data.system.items()):
        v = series.finite().values
        if len(v):
            p50, p95, p99 = np.percentile(v, [50, 95, 99])
            figures[name] = {
                "p50": pct(p50),
                "p95": pct(p95),
                "p99": pct(p99),
                "max": pct(v.max()),
                "samples": int(len(v)),
            }
    return RuleResult(
        NAME, RuleStatus.NoIssuesFound, f"usage of {len(figures)} system metric(s)", params, figures=figures
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
