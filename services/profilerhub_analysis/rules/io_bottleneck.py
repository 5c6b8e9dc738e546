"""IOBottleneck: the CPU waits on I/O while the GPUs wait (more than ``threshold`` % of datapoints
with iowait above ``io_threshold`` and GPU below ``gpu_threshold``, after ``patience``)."""

from __future__ import annotations

from typing import Any

from profilerhub_analysis.rules._bottleneck import bottleneck
from profilerhub_analysis.rules.base import Param, RuleData, RuleResult, RuleSpec

NAME = "IOBottleneck"
PARAMS = (
    Param("threshold", 50, 0, 100, description="% of datapoints that must be I/O-bound to trigger"),
    Param("gpu_threshold", 10, 0, 100, description="GPU utilisation (%) below which the GPU counts as idle"),
    Param("io_threshold", 50, 0, 100, description="CPU iowait (%) above which I/O counts as the bottleneck"),
    Param("patience", 1000, 0, 1e9, integer=True, description="datapoints skipped at the start"),
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


SPEC = RuleSpec(NAME, PARAMS, evaluate, __doc__.splitlines()[0] if __doc__ else NAME)
