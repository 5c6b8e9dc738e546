"""IOBottleneck: the CPU waits on I/O while the GPUs wait (more than ``threshold`` % of datapoints
with iowait above ``io_threshold`` and GPU below ``gpu_threshold``, after ``patience``)."""

from __future__ import annotations

from typing import Any

from profilerhub_analysis.rules._bottleneck import bottleneck, bottleneck_params
from profilerhub_analysis.rules.base import RuleData, RuleResult, RuleSpec, percent_param

NAME = "IOBottleneck"
PARAMS = bottleneck_params(
    "I/O", percent_param("io_threshold", 50, "CPU iowait (%) above which I/O counts as the bottleneck")
)
RECOMMENDATION = (
    "Read data faster: local NVMe or a cache instead of network storage, larger files (TFRecord, "
    "WebDataset shards), more DataLoader workers and prefetching."
)


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    return bottleneck(
        NAME,
        data,
        params,
        data.system.get("cpu_iowait_percent"),
        "iowait",
        params["io_threshold"],
        "no I/O wait samples: the system samples carry no cpu_iowait_percent "
        "(an older SDK, or no /proc/stat)",
        RECOMMENDATION,
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
