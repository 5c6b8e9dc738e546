"""What CPUBottleneck and IOBottleneck share: the share of datapoints where one resource is busy
while the GPUs are idle.

After ``patience`` datapoints, a datapoint is a bottleneck when the resource is above its
threshold and the GPU (the busiest GPU at that time) is below ``gpu_threshold``; the rule is
triggered when bottleneck datapoints are more than ``threshold`` % of all datapoints. Each run of
consecutive bottleneck datapoints is a finding's time range (the longest first).
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
    RuleStatus,
    Series,
    earlier_index,
    error,
    evidence,
    not_enough,
    patience_param,
    pct,
    percent_param,
    runs,
)


def bottleneck_rule(
    name: str,
    doc: str | None,
    bound: str,
    resource: Param,
    series: str,
    resource_label: str,
    missing: str,
    recommendation: str,
) -> RuleSpec:
    """A bottleneck rule's spec: its parameters (``bottleneck_params``), and an ``evaluate`` that
    reads the system series ``series`` against the threshold ``resource`` names."""

    def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
        return bottleneck(
            name,
            data,
            params,
            data.system.get(series),
            resource_label,
            params[resource.name],
            missing,
            recommendation,
        )

    return RuleSpec.of(name, bottleneck_params(bound, resource), evaluate, doc)


def bottleneck_params(bound: str, resource: Param) -> tuple[Param, ...]:
    """The parameters of a bottleneck rule: ``threshold`` (% of datapoints ``bound``-bound),
    ``gpu_threshold``, the ``resource``'s own threshold, ``patience`` (SageMaker's order)."""
    return (
        percent_param("threshold", 50, f"% of datapoints that must be {bound}-bound to trigger"),
        percent_param("gpu_threshold", 10, "GPU utilisation (%) below which the GPU counts as idle"),
        resource,
        patience_param(),
    )


def busiest_gpu(data: RuleData, t_ns: np.ndarray) -> np.ndarray:
    """The highest utilisation of any GPU at each of ``t_ns`` (nearest earlier sample)."""
    out = np.full(len(t_ns), -np.inf)
    for series in data.gpu_util.values():
        s = series.finite()
        if not len(s):
            continue
        out = np.maximum(out, s.values[earlier_index(s.t_ns, t_ns)])
    return out


def bottleneck(
    name: str,
    data: RuleData,
    params: dict[str, Any],
    resource: Series | None,
    resource_label: str,
    limit: float,
    missing: str,
    recommendation: str,
) -> RuleResult:
    if not data.gpu_util:
        return error(
            name,
            params,
            f"no GPU samples: the job ran on CPU, and {name} compares {resource_label} with GPU utilisation",
        )
    if resource is None or not len(resource.finite()):
        return error(name, params, missing)
    r = resource.finite()
    patience = params["patience"]
    if len(r) <= patience:
        return not_enough(name, data, params, f"{len(r)} {resource_label} datapoints, patience is {patience}")
    t, v = r.t_ns[patience:], r.values[patience:]
    gpu = busiest_gpu(data, t)
    hit = (v > limit) & (gpu < params["gpu_threshold"])
    share = 100.0 * hit.sum() / len(hit)
    figures = {
        "datapoints": int(len(hit)),
        "bottleneck_datapoints": int(hit.sum()),
        "bottleneck_percent": pct(share),
        f"{resource_label}_p95": pct(np.percentile(v, 95)),
        "gpu_p95": pct(np.percentile(gpu[np.isfinite(gpu)], 95)) if np.isfinite(gpu).any() else None,
    }
    if share <= params["threshold"]:
        reason = (
            f"{share:.1f} % of datapoints were {resource_label}-bound, "
            f"not more than {params['threshold']:g} %"
        )
        return RuleResult(name, RuleStatus.NoIssuesFound, reason, params, figures=figures)
    spans = runs(hit)
    order = np.argsort(-(spans[:, 1] - spans[:, 0]), kind="stable")
    findings = [
        Finding(
            f"{resource_label} above {limit:g} % while GPU utilisation below {params['gpu_threshold']:g} %",
            int(t[a]),
            int(t[b]),
            {
                f"{resource_label}_mean": pct(v[a : b + 1].mean()),
                "gpu_max": pct(gpu[a : b + 1].max()),
                "datapoints": int(b - a + 1),
            },
            f"system.{resource_label}",
        )
        for a, b in spans[order].tolist()
    ]
    reason = f"{share:.1f} % of datapoints were {resource_label}-bound (> {params['threshold']:g} %)"
    ev = {f"system.{resource_label}": evidence(r)}
    return RuleResult(name, RuleStatus.IssuesFound, reason, params, findings, figures, ev, recommendation)
