"""What a job's rule configuration may hold, without the rules themselves (no numpy): the hub
checks a configuration's size and fills in the default before any rule is loaded."""

from __future__ import annotations

from typing import Any

MAX_RULES = 20
"""Rules per job (SageMaker's limit)."""
DEFAULT_RULES: list[dict[str, Any]] = [{"rule": "ProfilerReport", "parameters": {}}]
"""What a job runs when neither it nor its domain configures rules (as SageMaker runs ProfilerReport)."""

__all__ = ["DEFAULT_RULES", "MAX_RULES"]
