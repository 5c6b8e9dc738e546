"""CPUBottleneck: the CPU is busy while the GPUs wait (more than ``threshold`` % of datapoints
with CPU above ``cpu_threshold`` and GPU below ``gpu_threshold``, after ``patience``)."""

from __future__ import annotations

from typing import Any

from profilerhub_analysis.rules._bottleneck import bottleneck
from profilerhub_analysis.rules.base import Param, RuleData, RuleResult, RuleSpec

NAME = "CPUBottleneck"
PARAMS = (
    Param("threshold", 50, 0, 100, description="% of datapoints that must be CPU-bound to trigger"),
    Param("gpu_threshold", 10, 0, 100, description="GPU utilisation (%) below which the GPU counts as idle"),
    Param("cpu_threshold", 90, 0, 100, description="CPU utilisation (%) above which the CPU counts as busy"),
    Param("patience", 1000, 0, 1e9, integer=True, description="datapoints skipped at the start"),
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


SPEC = RuleSpec(NAME, PARAMS, evaluate, __doc__.splitlines()[0] if __doc__ else NAME)
