"""LoadBalancing: GPUs of one job working unevenly.

After ``patience`` datapoints, each GPU's utilisation is binned into a histogram (10 % bins); two
GPUs differ by the total-variation distance of their histograms (0 = same distribution, 1 =
disjoint). Triggered when some pair differs by more than ``threshold``.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import (
    Finding,
    Param,
    RuleData,
    RuleResult,
    RuleSpec,
    RuleStatus,
    error,
    evidence,
    not_enough,
    patience_param,
    pct,
    verdict,
)

NAME = "LoadBalancing"
PARAMS = (
    Param("threshold", 0.5, 0, 1, description="histogram distance between two GPUs that triggers"),
    patience_param(),
)
RECOMMENDATION = (
    "Balance the work: check the sampler shards data evenly, that one rank does not do extra work "
    "(logging, evaluation, checkpointing), and for model parallelism that stages are even."
)
BINS = np.linspace(0, 100, 11)


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    if not data.gpu_util:
        return error(NAME, params, "no GPU samples: the job ran on CPU")
    if len(data.gpu_util) < 2:
        return RuleResult(NAME, RuleStatus.NoIssuesFound, "one GPU: nothing to balance", params)
    patience = params["patience"]
    hists: dict[str, np.ndarray] = {}
    for gpu, s in data.gpu_util.items():
        v = s.finite().values[patience:]
        if len(v):
            # equal bins given as a count and range: numpy bins by arithmetic (checked against the
            # same edges, so the same counts as ``BINS``) instead of sorting the datapoints
            h, _ = np.histogram(np.clip(v, 0, 100), len(BINS) - 1, (BINS[0], BINS[-1]))
            hists[gpu] = h / h.sum()
    if len(hists) < 2:
        return not_enough(
            NAME, data, params, f"fewer than two GPUs with more than patience {patience} datapoints"
        )
    findings = []
    distances: dict[str, float] = {}
    for a, b in combinations(sorted(hists), 2):
        dist = 0.5 * float(np.abs(hists[a] - hists[b]).sum())
        distances[f"{a}~{b}"] = round(dist, 3)
        if dist > params["threshold"]:
            ma = float(np.nanmedian(data.gpu_util[a].values[patience:]))
            mb = float(np.nanmedian(data.gpu_util[b].values[patience:]))
            findings.append(
                Finding(
                    f"{a} and {b} differ by {dist:.2f} (> {params['threshold']:g}); "
                    f"median utilisation {ma:.0f} % vs {mb:.0f} %",
                    figures={
                        "gpus": [a, b],
                        "distance": round(dist, 3),
                        "median_a": pct(ma),
                        "median_b": pct(mb),
                    },
                    evidence=f"{a}.util_percent",
                )
            )
    return verdict(
        NAME,
        params,
        findings,
        found=f"{len(findings)} unbalanced pair(s) of GPUs",
        clean=f"{len(hists)} GPUs within {params['threshold']:g}",
        figures={"distances": distances, "gpus": len(hists)},
        evidence={f"{g}.util_percent": evidence(data.gpu_util[g]) for g in sorted(hists)} if findings else {},
        recommendation=RECOMMENDATION,
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
