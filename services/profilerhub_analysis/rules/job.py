"""A job's rules from its decoded records (at ingest) or its stored series (later, live)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profilerhub_analysis.rules import inputs
from profilerhub_analysis.rules.base import RuleParamError, WindowMemo
from profilerhub_analysis.rules.registry import DEFAULT_RULES, evaluate_rules, overall_status
from profilerhub_analysis.series import JobSeries, metric_columns
from profilerhub_analysis.tensors import TensorTable


def job_series(samples: Sequence[Any], annotations: Sequence[Any], metrics: Sequence[Any]) -> JobSeries:
    """The full-resolution series of a job's decoded SDK records (``series.pack`` stores them)."""
    t_ns, cols = inputs.system_columns(samples)
    steps, dataloader = inputs.annotation_ranges(annotations)
    return JobSeries(t_ns, cols, metric_columns(metrics), steps, dataloader)


def evaluate_job(
    configs: Sequence[Any] | None,
    series: JobSeries,
    traces: Sequence[dict[str, Any]],
    job: dict[str, Any],
    *,
    finished: bool,
    windows: WindowMemo | None = None,
    tensors: TensorTable | None = None,
    now_ns: int | None = None,
) -> dict[str, Any]:
    """``{"final", "status", "rules": [...]}`` for a job: ``configs`` (None or empty = ProfilerReport).

    ``windows``: the memo of the previous live scan of this same series, grown only at its end
    (see ``rules.base.WindowMemo``); the results are those of an evaluation without it.
    ``tensors``: the job's ``ph.watch`` reductions (None: it has none; the model rules then say
    so). ``now_ns``: the live scan's clock (StalledTrainingRule measures the silence up to it)."""
    data = inputs.from_columns(
        series.sys_t_ns,
        series.sys,
        steps=series.steps,
        dataloader=series.dataloader,
        traces=traces,
        job=job,
        finished=finished,
    )
    data.windows = windows
    data.tensors = tensors
    data.now_ns = now_ns
    try:
        results = evaluate_rules(list(configs or DEFAULT_RULES), data)
    except RuleParamError as exc:  # a domain default saved before a rule changed its parameters
        results = [
            {
                "rule": "configuration",
                "status": "Error",
                "reason": str(exc),
                "parameters": {},
                "findings": [],
                "finding_count": 0,
                "figures": {},
                "evidence": {},
                "recommendation": "",
                "missing_data": False,
            }
        ]
    return {"final": finished, "status": overall_status(results), "rules": results}


__all__ = ["evaluate_job", "job_series"]
