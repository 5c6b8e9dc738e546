"""CPUBottleneck: the CPU is busy while the GPUs wait (more than ``threshold`` % of datapoints
with CPU above ``cpu_threshold`` and GPU below ``gpu_threshold``, after ``patience``)."""

from __future__ import annotations

from typing import Any

from profilerhub_analysis.rules._bottleneck import bottleneck, bottleneck_params
from profilerhub_analysis.rules.base import RuleData, RuleResult, RuleSpec, percent_param

NAME = "CPUBottleneck"
PARAMS = bottleneck_params(
    "CPU", percent_param("cpu_threshold", 90, "CPU utilisation (%) above which the CPU counts as busy")
)
RECOMMENDATION = (
    "Move pre-processing off the training loop: more DataLoader workers, pre-processed data, or "
    "pre-processing on the GPU; or a CPU-richer instance."
)


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    return bottleneck(
        NAME,
        data,
        params,
        data.system.get("cpu_percent"),
        "cpu",
        params["cpu_threshold"],
        "no CPU samples: the SDK's system sampler recorded no cpu_percent",
        RECOMMENDATION,
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
