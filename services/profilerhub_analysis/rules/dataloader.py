"""Dataloader: too few or too many data-loading workers for the CPU cores, and steps that wait on data.

As SageMaker Debugger: triggered when the data-loading workers are fewer than ``min_threshold`` %
or more than ``max_threshold`` % of the CPU cores (checked when the worker count is known). Also
triggered when data loading takes more than ``fetch_threshold`` % of the step time, or when single
fetches are outliers (above median + 3 × IQR and over 10 ms), which is a loader that stalls.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import (
    Finding,
    Param,
    RuleData,
    RuleResult,
    RuleSpec,
    Series,
    error,
    evidence,
    not_enough,
    pct,
    verdict,
)

NAME = "Dataloader"
PARAMS = (
    Param("min_threshold", 70, 0, 10_000, description="fewest workers, as % of CPU cores"),
    Param("max_threshold", 200, 0, 10_000, description="most workers, as % of CPU cores"),
    Param(
        "fetch_threshold",
        50,
        0,
        100,
        description="% of step time spent loading data that triggers (ProfilerHub's addition)",
    ),
)
RECOMMENDATION = (
    "Give the DataLoader more workers (num_workers close to the CPU cores), pin_memory=True and "
    "prefetching; cache or pre-process slow inputs; look at the slow fetches in the timeline."
)
OUTLIER_MIN_MS = 10.0


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    findings: list[Finding] = []
    figures: dict[str, Any] = {}
    checked: list[str] = []
    if data.dataloader_workers is not None and data.cpu_count:
        checked.append("workers")
        share = 100.0 * data.dataloader_workers / data.cpu_count
        figures |= {
            "workers": data.dataloader_workers,
            "cpu_cores": data.cpu_count,
            "workers_percent": pct(share),
        }
        if share < params["min_threshold"] or share > params["max_threshold"]:
            findings.append(
                Finding(
                    f"{data.dataloader_workers} data-loading worker(s) for {data.cpu_count} CPU cores "
                    f"({share:.0f} %, outside {params['min_threshold']:g}–{params['max_threshold']:g} %)",
                    figures={"workers": data.dataloader_workers, "cpu_cores": data.cpu_count},
                )
            )
    d = data.dataloader_ns.astype(np.float64) / 1e6
    ev: dict[str, list[list[float]]] = {}
    if len(d):
        checked.append("fetch times")
        median = float(np.median(d))
        q1, q3 = np.percentile(d, [25, 75])
        limit = max(median + 3 * float(q3 - q1), OUTLIER_MIN_MS)
        figures |= {
            "fetches": int(len(d)),
            "fetch_median_ms": pct(median),
            "fetch_max_ms": pct(d.max()),
            "fetch_total_ms": pct(d.sum()),
        }
        step_total = float(data.step_dur_ns.sum()) / 1e6
        if step_total > 0:
            share = 100.0 * min(d.sum(), step_total) / step_total
            figures["fetch_percent_of_steps"] = pct(share)
            if share > params["fetch_threshold"]:
                findings.append(
                    Finding(
                        f"data loading took {share:.1f} % of the step time "
                        f"(> {params['fetch_threshold']:g} %)",
                        int(data.dataloader_start_ns.min()),
                        int((data.dataloader_start_ns + data.dataloader_ns).max()),
                        {"fetch_total_ms": pct(d.sum()), "step_total_ms": pct(step_total)},
                        "dataloader_ms",
                    )
                )
        slow = np.flatnonzero(d > limit)
        for i in slow[np.argsort(-d[slow], kind="stable")].tolist():
            findings.append(
                Finding(
                    f"a data fetch took {d[i]:.1f} ms (median {median:.1f} ms)",
                    int(data.dataloader_start_ns[i]),
                    int(data.dataloader_start_ns[i] + data.dataloader_ns[i]),
                    {"fetch_ms": pct(d[i]), "median_ms": pct(median)},
                    "dataloader_ms",
                )
            )
        if findings:
            ev["dataloader_ms"] = evidence(Series(data.dataloader_start_ns, d))
    if not checked:
        if not data.finished:
            return not_enough(NAME, data, params, "no data-loading ranges yet")
        return error(
            NAME,
            params,
            "no data-loading ranges: neither a trace's DataLoader events nor an SDK "
            "annotation named for data loading (e.g. ph.annotate('dataloader')), and no worker count",
        )
    return verdict(
        NAME,
        params,
        findings,
        found=f"{len(findings)} finding(s) from {', '.join(checked)}",
        clean=f"checked {', '.join(checked)}",
        figures=figures,
        evidence=ev,
        recommendation=RECOMMENDATION,
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
