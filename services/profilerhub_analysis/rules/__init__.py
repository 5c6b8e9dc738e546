"""Rules that explain a run, with SageMaker Debugger's names, parameters and defaults.

Each rule is a module with ``NAME``, ``PARAMS`` and ``evaluate(data, params) -> RuleResult``, a
pure function over a ``RuleData`` (arrays built from the stored series by ``rules.inputs``).
``evaluate_rules(configs, data)`` runs a job's configured rules; ``ProfilerReport`` runs all of
them, taking ``<Rule>_<param>`` overrides. Configuration: ``[{"rule": "CPUBottleneck",
"parameters": {"threshold": 30}}, …]`` (at most ``MAX_RULES``), checked by ``check_configs``.
See ``docs/rules.md``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from profilerhub_analysis.rules.base import (
        Finding,
        Param,
        RuleData,
        RuleParamError,
        RuleResult,
        RuleStatus,
        Series,
    )
    from profilerhub_analysis.rules.registry import (
        MAX_RULES,
        RULES,
        check_configs,
        evaluate_rules,
        overall_status,
    )

# Loaded on first use (PEP 562), so ``rules.limits`` or one rule's module imports without the
# others, and the hub, which checks configurations, starts without numpy.
_FROM = {
    **dict.fromkeys(
        ("Finding", "Param", "RuleData", "RuleParamError", "RuleResult", "RuleStatus", "Series"), "base"
    ),
    **dict.fromkeys(("MAX_RULES", "RULES", "check_configs", "evaluate_rules", "overall_status"), "registry"),
}


def __getattr__(name: str) -> Any:
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_FROM[name]}"), name)


__all__ = [
    "MAX_RULES",
    "RULES",
    "Finding",
    "Param",
    "RuleData",
    "RuleParamError",
    "RuleResult",
    "RuleStatus",
    "Series",
    "check_configs",
    "evaluate_rules",
    "overall_status",
]
