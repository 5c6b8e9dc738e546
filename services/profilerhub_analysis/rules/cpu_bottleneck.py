"""CPUBottleneck: the CPU is busy while the GPUs wait (more than ``threshold`` % of datapoints
with CPU above ``cpu_threshold`` and GPU below ``gpu_threshold``, after ``patience``)."""

from __future__ import annotations

from profilerhub_analysis.rules._bottleneck import bottleneck_rule
from profilerhub_analysis.rules.base import percent_param

NAME = "CPUBottleneck"
RECOMMENDATION = (
    "Move pre-processing off the training loop: more DataLoader workers, pre-processed data, or "
    "pre-processing on the GPU; or a CPU-richer instance."
)
SPEC = bottleneck_rule(
    NAME,
    __doc__,
    "CPU",
    percent_param("cpu_threshold", 90, "CPU utilisation (%) above which the CPU counts as busy"),
    series="cpu_percent",
    resource_label="cpu",
    missing="no CPU samples: the SDK's system sampler recorded no cpu_percent",
    recommendation=RECOMMENDATION,
)
PARAMS, evaluate = SPEC.params, SPEC.evaluate
