"""StalledTrainingRule: no progress for ``threshold`` seconds (SageMaker's 1800).

Progress is a ``ph.step`` (its start and end) or a saved tensor step (the time the SDK reduced
it), so the rule works for a job without ``ph.watch``. While the job runs, the time since the last
sign of progress is measured up to the evaluation (the live scan's clock); a gap between two signs
of progress (or, at the end, from the last one to the job's end) longer than ``threshold`` is a
stall that happened. Live evaluation sees what has streamed, so a run whose chunks reach the hub
late looks idle for up to its chunk interval: keep ``threshold`` well above it."""

from __future__ import annotations

from typing import Any

import numpy as np

from profilerhub_analysis.rules.base import Finding, Param, RuleData, RuleResult, RuleSpec, RuleStatus, error

NAME = "StalledTrainingRule"
PARAMS = (
    Param(
        "threshold", 1800, 1, 1e9, description="seconds without a step or saved tensor that count as a stall"
    ),
)
RECOMMENDATION = (
    "Nothing progressed for that long: look for a hung collective (one rank waiting for another), "
    "a data loader deadlock, or a process stuck in I/O; py-spy dump --pid shows where it waits. "
    'Stop it with stop_on=["StalledTrainingRule"] to save the compute.'
)


def progress_ns(data: RuleData) -> np.ndarray:
    """Sorted times of every sign of progress: step starts and ends, tensor reduction times."""
    parts = [data.step_start_ns, data.step_start_ns + data.step_dur_ns]
    if data.tensors is not None and len(data.tensors):
        ts = data.tensors.ts_ns
        parts.append(ts[ts > 0])
    t = np.concatenate([np.asarray(p, np.int64) for p in parts])
    return np.unique(t)


def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
    limit_ns = int(params["threshold"] * 1e9)
    t = progress_ns(data)
    start = data.job_start_ns
    end = data.now_ns if not data.finished else data.job_end_ns
    if not len(t) and start is None:
        if not data.finished:
            return RuleResult(
                NAME, RuleStatus.InProgress, "waiting for a step (ph.step) or a saved tensor", params
            )
        return error(
            NAME, params, "no steps recorded: mark steps with ph.step (or save tensors with ph.watch)"
        )
    points = np.concatenate([[start] if start is not None else [], t]).astype(np.int64)
    points = np.unique(points)
    edges = np.concatenate([points, [end]]) if end is not None and end > points[-1] else points
    gaps = np.diff(edges)
    findings: list[Finding] = []
    for i in np.flatnonzero(gaps > limit_ns).tolist():
        a, b = int(edges[i]), int(edges[i + 1])
        ongoing = not data.finished and i == len(gaps) - 1 and end is not None and b == end
        what = "no progress for" if not ongoing else "no progress since then, for"
        msg = f"{what} {(b - a) / 1e9:.0f} s (threshold {params['threshold']:g} s)"
        findings.append(Finding(msg, a, b, {"stalled_s": round((b - a) / 1e9, 1), "ongoing": ongoing}))
    figures = {
        "longest_gap_s": round(float(gaps.max()) / 1e9, 1) if len(gaps) else 0.0,
        "signs_of_progress": len(t),
    }
    if not findings:
        reason = (
            f"longest time without progress {figures['longest_gap_s']} s, within {params['threshold']:g} s"
        )
        return RuleResult(NAME, RuleStatus.NoIssuesFound, reason, params, figures=figures)
    first = findings[-1] if findings[-1].figures["ongoing"] else findings[0]
    return RuleResult(
        NAME, RuleStatus.IssuesFound, first.message, params, findings, figures, {}, RECOMMENDATION
    )


SPEC = RuleSpec.of(NAME, PARAMS, evaluate, __doc__)
