"""Validation of :func:`profilerhub.init`'s arguments into one frozen :class:`Config`.

Bad arguments are programming errors and raise :class:`ValueError` from ``init`` (before the
training loop starts); everything that can go wrong later is logged, never raised.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ._spill import DEFAULT_MAX_BYTES as DEFAULT_SPILL_MAX_BYTES
from ._spill import spill_root

#: SageMaker's limits for metric definitions (CreateTrainingJob ``MetricDefinitions``).
MAX_METRIC_DEFINITIONS = 40
MAX_METRIC_NAME = 255
MAX_METRIC_REGEX = 500

MIN_SAMPLE_INTERVAL_S = 0.1
MAX_SAMPLE_INTERVAL_S = 60.0

#: The hub's resource-name rule (also SageMaker's training-job name rule).
JOB_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")

TORCH_SCHEDULE_KEYS = {"wait": 0, "warmup": 1, "active": 1, "repeat": 1, "skip_first": 0}
TORCH_FLAG_KEYS = ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")
DEFAULT_TORCH_PROFILER = {"wait": 1, "warmup": 1, "active": 3}
#: ``torch_profiler="full"`` (or ``{"preset": "full", ...}``): everything the operator, kernel,
#: memory and module views read. Its cost is in docs/sdk.md ("The full preset").
TORCH_PRESETS: dict[str, dict[str, bool]] = {
    "full": {"record_shapes": True, "profile_memory": True, "with_stack": True, "with_modules": True},
}

DEFAULT_LOCAL_OUTPUT = "./profilerhub-traces"


@dataclass(frozen=True)
class MetricDefinition:
    """One ``{"Name", "Regex"}`` pair; the regex's first group is the value."""

    name: str
    regex: re.Pattern[str]

    def as_dict(self) -> dict[str, str]:
        return {"Name": self.name, "Regex": self.regex.pattern}


@dataclass(frozen=True)
class TorchProfilerConfig:
    """``torch.profiler.schedule`` arguments and ``torch.profiler.profile`` flags."""

    wait: int
    warmup: int
    active: int
    repeat: int
    skip_first: int
    flags: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    """Everything a run needs, validated."""

    job: str
    sink: Literal["local", "s3", "hub"]
    #: local: a directory; s3: ``s3://bucket/prefix``; hub: the hub's base URL.
    location: str
    token: str | None
    torch_profiler: TorchProfilerConfig | None
    sample_interval_s: float
    chunk_interval_s: float
    metric_definitions: tuple[MetricDefinition, ...]
    capture_output: bool
    flush_timeout_s: float
    max_pending_bytes: int
    rules: tuple[dict[str, Any], ...] = ()
    stop_on: tuple[str, ...] = ()
    #: Where undelivered files are kept (``profilerhub._spill``) and how much it may hold; 0 = off.
    spill_dir: Path = field(default_factory=lambda: spill_root())
    spill_max_bytes: int = DEFAULT_SPILL_MAX_BYTES
    #: A folder the script's own TensorBoard writer fills, copied into the job (``_tensorboard``).
    tensorboard_dir: Path | None = None


def default_job_name() -> str:
    """``$PROFILERHUB_JOB``, else ``<script name>-<UTC time>`` made into a valid name."""
    env = os.environ.get("PROFILERHUB_JOB")
    if env:
        return env
    stem = os.path.splitext(os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else ""))[0]
    stem = re.sub(r"[^a-zA-Z0-9]+", "-", stem).strip("-")[:40] or "job"
    return f"{stem}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"


def validate_job_name(job: str) -> str:
    if not isinstance(job, str) or not JOB_NAME_RE.match(job):
        raise ValueError(
            f"job name {job!r} is invalid: use 1-63 letters, digits and hyphens, "
            "starting with a letter or digit (e.g. 'resnet50-bs64')"
        )
    return job


def parse_metric_definitions(defs: Sequence[Mapping[str, str]] | None) -> tuple[MetricDefinition, ...]:
    """Check SageMaker-style ``[{"Name": ..., "Regex": ...}]`` and compile the regexes."""
    if defs is None:
        return ()
    if isinstance(defs, (str, bytes, Mapping)) or not isinstance(defs, Sequence):
        raise ValueError('metric_definitions must be a list of {"Name": ..., "Regex": ...} dicts')
    if len(defs) > MAX_METRIC_DEFINITIONS:
        raise ValueError(f"metric_definitions has {len(defs)} entries; at most {MAX_METRIC_DEFINITIONS}")
    out: list[MetricDefinition] = []
    seen: set[str] = set()
    for i, d in enumerate(defs):
        if not isinstance(d, Mapping) or set(d) != {"Name", "Regex"}:
            raise ValueError(f'metric_definitions[{i}] must have exactly the keys "Name" and "Regex"')
        name, regex = d["Name"], d["Regex"]
        if not isinstance(name, str) or not 1 <= len(name) <= MAX_METRIC_NAME:
            raise ValueError(f"metric_definitions[{i}].Name must be 1-{MAX_METRIC_NAME} characters")
        if name in seen:
            raise ValueError(f"metric_definitions[{i}].Name {name!r} is defined twice")
        if not isinstance(regex, str) or not 1 <= len(regex) <= MAX_METRIC_REGEX:
            raise ValueError(f"metric_definitions[{i}].Regex must be 1-{MAX_METRIC_REGEX} characters")
        try:
            compiled = re.compile(regex)
        except re.error as exc:
            raise ValueError(f"metric_definitions[{i}].Regex {regex!r} does not compile: {exc}") from exc
        if compiled.groups < 1:
            raise ValueError(
                f"metric_definitions[{i}].Regex {regex!r} needs a capturing group for the value, "
                "e.g. 'loss=([0-9.]+)'"
            )
        seen.add(name)
        out.append(MetricDefinition(name, compiled))
    return tuple(out)


def parse_torch_profiler(spec: Mapping[str, Any] | bool | str | None) -> TorchProfilerConfig | None:
    if spec is None or spec is False:
        return None
    if spec is True:
        spec = DEFAULT_TORCH_PROFILER
    if isinstance(spec, str):
        spec = {**DEFAULT_TORCH_PROFILER, "preset": spec}
    if not isinstance(spec, Mapping):
        raise ValueError('torch_profiler must be a dict like {"wait": 5, "warmup": 2, "active": 10}')
    if "preset" in spec:
        preset = spec["preset"]
        if preset not in TORCH_PRESETS:
            known = ", ".join(TORCH_PRESETS)
            raise ValueError(f"torch_profiler preset {preset!r} is unknown; presets: {known}")
        spec = {**TORCH_PRESETS[preset], **{k: v for k, v in spec.items() if k != "preset"}}
    unknown = set(spec) - set(TORCH_SCHEDULE_KEYS) - set(TORCH_FLAG_KEYS)
    if unknown:
        allowed = ", ".join([*TORCH_SCHEDULE_KEYS, *TORCH_FLAG_KEYS])
        raise ValueError(f"torch_profiler has unknown keys {sorted(unknown)}; allowed: {allowed}")
    sched: dict[str, int] = {}
    for key, default in TORCH_SCHEDULE_KEYS.items():
        value = spec.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"torch_profiler[{key!r}] must be a non-negative integer")
        sched[key] = value
    if sched["active"] < 1:
        raise ValueError("torch_profiler['active'] must be at least 1")
    flags = {k: bool(spec[k]) for k in TORCH_FLAG_KEYS if k in spec}
    return TorchProfilerConfig(flags=flags, **sched)


def parse_output(output: str | os.PathLike[str] | None, hub_url: str | None) -> tuple[str, str]:
    """Return ``(sink, location)`` for ``output`` (None: the hub, else a local dir or s3 URL)."""
    if output is None:
        if hub_url:
            if not hub_url.startswith(("http://", "https://")):
                raise ValueError(f"hub URL {hub_url!r} must start with http:// or https://")
            return "hub", hub_url.rstrip("/")
        return "local", DEFAULT_LOCAL_OUTPUT
    text = os.fspath(output)
    if text.startswith("s3://"):
        bucket = text[5:].split("/", 1)[0]
        if not bucket:
            raise ValueError(f"output {text!r} names no bucket; use s3://bucket/prefix")
        return "s3", text.rstrip("/")
    if text.startswith("file://"):
        text = text[7:]
    if "://" in text:
        raise ValueError(f"output {text!r}: use a directory, s3://bucket/prefix, or None for the hub")
    return "local", text


def build_config(
    *,
    job: str | None,
    output: str | os.PathLike[str] | None,
    torch_profiler: Mapping[str, Any] | bool | str | None,
    sample_interval_s: float,
    chunk_interval_s: float,
    metric_definitions: Sequence[Mapping[str, str]] | None,
    capture_output: bool,
    hub_url: str | None,
    token: str | None,
    flush_timeout_s: float,
    max_pending_bytes: int,
    rules: Sequence[str | Mapping[str, Any]] | None = None,
    stop_on: Sequence[str] | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
    spill_max_bytes: int | None = None,
    tensorboard_dir: str | os.PathLike[str] | None = None,
) -> Config:
    """Validate ``init``'s arguments (raising ValueError) and resolve environment defaults."""
    if not isinstance(sample_interval_s, (int, float)) or not (
        MIN_SAMPLE_INTERVAL_S <= sample_interval_s <= MAX_SAMPLE_INTERVAL_S
    ):
        raise ValueError(
            f"sample_interval_s must be between {MIN_SAMPLE_INTERVAL_S} and {MAX_SAMPLE_INTERVAL_S} seconds"
        )
    if not isinstance(chunk_interval_s, (int, float)) or not 0.05 <= chunk_interval_s <= 600:
        raise ValueError("chunk_interval_s must be between 0.05 and 600 seconds")
    if not isinstance(flush_timeout_s, (int, float)) or flush_timeout_s < 0:
        raise ValueError("flush_timeout_s must be a non-negative number of seconds")
    if max_pending_bytes < 1 << 20:
        raise ValueError("max_pending_bytes must be at least 1 MiB")
    if spill_max_bytes is None:
        spill_max_bytes = _env_int("PROFILERHUB_SPILL_MAX_BYTES", DEFAULT_SPILL_MAX_BYTES)
    if isinstance(spill_max_bytes, bool) or not isinstance(spill_max_bytes, int) or spill_max_bytes < 0:
        raise ValueError("spill_max_bytes must be a non-negative number of bytes (0 turns spilling off)")
    hub_url = hub_url or os.environ.get("PROFILERHUB_URL") or None
    token = token or os.environ.get("PROFILERHUB_TOKEN") or None
    sink, location = parse_output(output, hub_url)
    return Config(
        job=validate_job_name(job if job is not None else default_job_name()),
        sink=sink,  # type: ignore[arg-type]
        location=location,
        token=token,
        torch_profiler=parse_torch_profiler(torch_profiler),
        sample_interval_s=float(sample_interval_s),
        chunk_interval_s=float(chunk_interval_s),
        metric_definitions=parse_metric_definitions(metric_definitions),
        capture_output=bool(capture_output),
        flush_timeout_s=float(flush_timeout_s),
        max_pending_bytes=int(max_pending_bytes),
        rules=parse_rules(rules),
        stop_on=parse_stop_on(stop_on),
        spill_dir=spill_root(spill_dir),
        spill_max_bytes=spill_max_bytes,
        tensorboard_dir=parse_tensorboard_dir(tensorboard_dir),
    )


def parse_tensorboard_dir(folder: str | os.PathLike[str] | None) -> Path | None:
    """A local folder (it may not exist yet: the script's writer makes it); ValueError otherwise."""
    if folder is None:
        return None
    if not isinstance(folder, str | os.PathLike) or not os.fspath(folder):
        raise ValueError("tensorboard_dir must be a local folder path, e.g. './runs/exp1'")
    text = os.fspath(folder)
    if isinstance(text, bytes) or "://" in text:
        raise ValueError(
            f"tensorboard_dir {text!r} must be a local folder; the SDK copies it into the job's storage"
        )
    path = Path(text).expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise ValueError(f"tensorboard_dir {text!r} exists and is not a folder")
    return path


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a whole number of bytes") from None


MAX_RULES = 20
RULE_NAMES = (
    "LowGPUUtilization", "CPUBottleneck", "IOBottleneck", "StepOutlier", "BatchSize", "Dataloader",
    "GPUMemoryIncrease", "MaxInitializationTime", "OverallSystemUsage", "LoadBalancing", "ProfilerReport",
    "DataLoaderTime", "CommunicationTime", "TensorCoresUnused", "DataParallelUsed", "NcclBackendUnused",
    "MemoryNearLimit",
    "VanishingGradient", "ExplodingTensor", "Overfit", "Overtraining", "LossNotDecreasing",
    "WeightUpdateRatio", "SaturatedActivation", "DeadRelu", "PoorWeightInitialization", "TensorVariance",
    "AllZero", "UnchangedTensor", "ClassImbalance", "StalledTrainingRule",
)  # fmt: skip
"""The hub's rules (``profilerhub_analysis.rules.RULES``, which the SDK may not import); the hub
checks parameters, this catches a misspelt name before training starts."""


def parse_stop_on(stop_on: Sequence[str] | None) -> tuple[str, ...]:
    """Rule names the run stops on (``ph.StopTraining``); ValueError on one the hub does not know."""
    if stop_on is None:
        return ()
    if isinstance(stop_on, str | bytes) or not isinstance(stop_on, Sequence):
        raise ValueError('stop_on must be a list of rule names, e.g. ["LowGPUUtilization"]')
    if len(stop_on) > MAX_RULES:
        raise ValueError(f"stop_on has {len(stop_on)} entries; at most {MAX_RULES}")
    for i, name in enumerate(stop_on):
        if name not in RULE_NAMES:
            raise ValueError(f"stop_on[{i}]: unknown rule {name!r} (known: {', '.join(RULE_NAMES)})")
    return tuple(dict.fromkeys(stop_on))


def parse_rules(rules: Sequence[str | Mapping[str, Any]] | None) -> tuple[dict[str, Any], ...]:
    """``[{"rule", "parameters"}]`` from names or dicts; ValueError on a shape or name the hub refuses."""
    if rules is None:
        return ()
    if isinstance(rules, str | bytes) or not isinstance(rules, Sequence):
        raise ValueError('rules must be a list of rule names or {"rule": ..., "parameters": {...}} dicts')
    if len(rules) > MAX_RULES:
        raise ValueError(f"rules has {len(rules)} entries; at most {MAX_RULES}")
    out: list[dict[str, Any]] = []
    for i, entry in enumerate(rules):
        item = (
            {"rule": entry} if isinstance(entry, str) else dict(entry) if isinstance(entry, Mapping) else None
        )
        if item is None or set(item) - {"rule", "parameters"} or not isinstance(item.get("rule"), str):
            raise ValueError(f'rules[{i}] must be a rule name or {{"rule": ..., "parameters": {{...}}}}')
        if item["rule"] not in RULE_NAMES:
            raise ValueError(f"rules[{i}]: unknown rule {item['rule']!r} (known: {', '.join(RULE_NAMES)})")
        if not isinstance(item.get("parameters", {}), Mapping):
            raise ValueError(f"rules[{i}].parameters must be a dict")
        if any(o["rule"] == item["rule"] for o in out):
            raise ValueError(f"rules[{i}]: {item['rule']} is given twice")
        params: Any = item.get("parameters") or {}
        out.append({"rule": item["rule"], "parameters": dict(params)})
    return tuple(out)
