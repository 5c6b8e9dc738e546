"""IOBottleneck: the CPU waits on I/O while the GPUs wait (more than ``threshold`` % of datapoints
with iowait above ``io_threshold`` and GPU below ``gpu_threshold``, after ``patience``)."""

from __future__ import annotations

from profilerhub_analysis.rules._bottleneck import bottleneck_rule
from profilerhub_analysis.rules.base import percent_param

NAME = "IOBottleneck"
RECOMMENDATION = (
    "Read data faster: local NVMe or a cache instead of network storage, larger files (TFRecord, "
    "WebDataset shards), more DataLoader workers and prefetching."
)
SPEC = bottleneck_rule(
    NAME,
    __doc__,
    "I/O",
    percent_param("io_threshold", 50, "CPU iowait (%) above which I/O counts as the bottleneck"),
    series="cpu_iowait_percent",
    resource_label="iowait",
    missing="no I/O wait samples: the system samples carry no cpu_iowait_percent "
    "(an older SDK, or no /proc/stat)",
    recommendation=RECOMMENDATION,
)
PARAMS, evaluate = SPEC.params, SPEC.evaluate
