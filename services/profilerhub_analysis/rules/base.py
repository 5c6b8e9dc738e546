"""What every rule shares: its input (``RuleData``), its answer (``RuleResult`` with ``Finding``s),
the parameter specs and the helpers that cut a series into SageMaker's windows.

A rule is a plain function ``evaluate(data, params) -> RuleResult`` over arrays; it does no I/O.
Statuses follow SageMaker Debugger:

    InProgress      the job is still running and there is not yet enough data to decide
    NoIssuesFound   the rule ran on the data and nothing triggered it
    IssuesFound     at least one finding
    Error           the rule could not run; ``reason`` says what was missing
                    ("no GPU samples: the job ran on CPU"), never an opaque "no debugging data";
                    ``missing_data`` tells a job without that data (the app shows "No data")
                    from a rule that failed (a bug, or a bad configuration)

Series semantics follow SageMaker too: ``patience`` is the number of datapoints skipped at the
start (warm-up), ``window`` the number of datapoints one quantile is taken over.

Live evaluation re-runs the rules on a series that only grows at its end. A window once full never
changes then, so :class:`WindowMemo` keeps the quantiles of full windows from one scan to the next
and :func:`window_quantiles` computes only the windows that filled since (the same numbers: each
window's quantile is its own ``np.percentile`` row). Whoever holds a memo must drop it when the
series changed anywhere but at its end (``live_rules`` does, when a late chunk sorts in earlier).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from profilerhub_analysis.tensors import TensorTable

MAX_FINDINGS = 50
"""Findings kept per rule (the count of all is in ``figures``)."""
EVIDENCE_POINTS = 200
"""Points kept per evidence series."""


class RuleStatus(enum.StrEnum):
    InProgress = "InProgress"
    NoIssuesFound = "NoIssuesFound"
    IssuesFound = "IssuesFound"
    Error = "Error"


@dataclass
class Series:
    """One metric over time: ``t_ns`` (sorted, epoch ns) and ``values`` (float, NaN = not read)."""

    t_ns: np.ndarray
    values: np.ndarray
    source: str = "sdk"
    """``sdk`` (system samples) or ``trace`` (derived from a profiler trace)."""
    _finite: Series | None = field(default=None, init=False, repr=False, compare=False)

    def finite(self) -> Series:
        """The datapoints that were read (NaN dropped); computed once, shared by every rule."""
        if self._finite is None:
            ok = np.isfinite(self.values)
            if ok.all():
                self._finite = self
            else:
                self._finite = Series(self.t_ns[ok], self.values[ok], self.source)
                self._finite._finite = self._finite
        return self._finite

    def __len__(self) -> int:
        return len(self.values)


class WindowMemo:
    """Quantiles of full windows by key (rule, series, start, window length, quantiles): what a live
    job's previous scan computed. ``used`` is what this evaluation read or wrote, the part worth
    keeping for the next scan (``arrays()``; ``WindowMemo(arrays)`` restores it)."""

    def __init__(self, arrays: dict[str, np.ndarray] | None = None) -> None:
        self.saved = dict(arrays or {})
        self.used: dict[str, np.ndarray] = {}
        self.reused = 0
        """Windows taken from ``saved`` instead of computed, over this evaluation."""

    def get(self, key: str) -> np.ndarray | None:
        return self.saved.get(key)

    def put(self, key: str, quantiles: np.ndarray) -> None:
        self.used[key] = quantiles

    def arrays(self) -> dict[str, np.ndarray]:
        return dict(self.used)


@dataclass
class RuleData:
    """Everything a rule may read about one job, as arrays (built by ``rules.inputs``).

    ``system`` holds the SDK's system columns by name (``cpu_percent``, ``cpu3_percent``,
    ``gpu0.util_percent``, ``gpu0.mem_percent``, ``cpu_iowait_percent`` …); ``gpu_util`` and
    ``gpu_mem`` are per-GPU views of it (or, for util, the trace's kernel-busy buckets when no
    NVML sample exists). Steps: start and duration (ns) with their numbers. ``dataloader_ns``:
    durations of data-loading ranges (the trace's ``enumerate(DataLoader)…`` events and SDK
    annotations named for data loading). ``finished``: no more data will come.
    """

    system: dict[str, Series] = field(default_factory=dict)
    gpu_util: dict[str, Series] = field(default_factory=dict)
    gpu_mem: dict[str, Series] = field(default_factory=dict)
    step_start_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    step_dur_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    step_numbers: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    step_source: str = "sdk"
    dataloader_start_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    dataloader_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    dataloader_workers: int | None = None
    cpu_count: int | None = None
    job_start_ns: int | None = None
    job_end_ns: int | None = None
    finished: bool = True
    hosts: list[str] = field(default_factory=list)
    windows: WindowMemo | None = None
    """Full windows' quantiles from the previous live scan of this series (None: compute all)."""
    tensors: TensorTable | None = None
    """The ``ph.watch`` reductions (``profilerhub_analysis.tensors``); None: the job recorded none."""
    now_ns: int | None = None
    """When a live evaluation runs (epoch ns); None at the final one (``job_end_ns`` then)."""
    tb: list[dict[str, Any]] = field(default_factory=list)
    """Per trace, what the TensorBoard plugin's recommendations read: ``{"file", "rank", "average"
    (its step-time roles, µs), "facts" (``tbviews.views.facts``)}``; empty for a job without traces."""


@dataclass
class Finding:
    """One thing a rule found: when, the figures that triggered it, the evidence, what to do."""

    message: str
    start_ns: int | None = None
    end_ns: int | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    evidence: str | None = None
    """Name of the series (in the result's ``evidence``) that shows it."""
    steps: tuple[int, int] | None = None
    """A model rule's step range ``(first, last)`` in ``mode``'s steps (train: the ``ph.step``
    numbers), with the ``tensors`` it names; ``start_ns``/``end_ns`` then are those steps' times."""
    mode: str | None = None
    tensors: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "message": self.message,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "figures": self.figures,
            "evidence": self.evidence,
        }
        if self.steps is not None:
            out |= {"step_start": self.steps[0], "step_end": self.steps[1], "mode": self.mode}
            out["tensors"] = list(self.tensors or [])
        return out


@dataclass
class RuleResult:
    rule: str
    status: RuleStatus
    reason: str
    parameters: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, list[list[float]]] = field(default_factory=dict)
    """Series ``[[t_ns, value], …]`` (at most ``EVIDENCE_POINTS`` each) the findings point to."""
    recommendation: str = ""
    children: list[RuleResult] = field(default_factory=list)
    missing_data: bool = False
    """An ``Error`` because the job lacks what the rule reads (``reason`` says what), not a bug."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "status": self.status.value,
            "reason": self.reason,
            "parameters": self.parameters,
            "findings": [f.to_dict() for f in self.findings[:MAX_FINDINGS]],
            "finding_count": len(self.findings),
            "figures": self.figures,
            "evidence": self.evidence,
            "recommendation": self.recommendation if self.findings else "",
            "missing_data": self.missing_data,
        }
        if self.children:
            out["rules"] = [c.to_dict() for c in self.children]
        return out


@dataclass(frozen=True)
class Param:
    """One rule parameter: SageMaker's name and default, and its bounds.

    The default's type is the parameter's: a number (within ``low``/``high``, whole if
    ``integer``), a string (``choices`` if any; a name ending in ``regex`` must compile; at most
    ``MAX_TEXT`` characters), a flag (``True``/``False``, or the strings SageMaker's
    ``RuleParameters`` carry: ``"true"``/``"false"``), or ``None``: an optional number, unset."""

    name: str
    default: float | str | bool | None
    low: float = 0
    high: float = 1e12
    integer: bool = False
    description: str = ""
    choices: tuple[str, ...] = ()
    optional: bool = False
    """A number that may be set to None (``null``): that check is off."""


def patience_param(default: int = 1000) -> Param:
    """SageMaker's ``patience``: datapoints skipped at the start (warm-up)."""
    return Param("patience", default, 0, 1e9, integer=True, description="datapoints skipped at the start")


def window_param(default: int, description: str = "datapoints per quantile") -> Param:
    """SageMaker's ``window``: datapoints one figure (a quantile, a moving average) is taken over."""
    return Param("window", default, 1, 1e9, integer=True, description=description)


def percent_param(name: str, default: float, description: str) -> Param:
    """A threshold in percent (0 to 100)."""
    return Param(name, default, 0, 100, description=description)


MAX_TEXT = 500


class RuleParamError(ValueError):
    """A parameter a rule does not have, or a value out of its bounds."""


def resolve(rule: str, specs: Sequence[Param], given: dict[str, Any] | None) -> dict[str, Any]:
    """The effective parameters: ``given`` over the defaults, checked (``RuleParamError``)."""
    given = dict(given or {})
    known = {p.name: p for p in specs}
    unknown = sorted(set(given) - set(known))
    if unknown:
        names = ", ".join(known) or "none"
        raise RuleParamError(f"{rule} has no parameter {unknown[0]!r} (it has: {names})")
    out: dict[str, Any] = {}
    for p in specs:
        value = given.get(p.name, p.default)
        if isinstance(p.default, bool):
            out[p.name] = _flag(rule, p, value)
        elif isinstance(p.default, str):
            out[p.name] = _text(rule, p, value)
        elif value is None and (p.default is None or p.optional):
            out[p.name] = None
        else:
            out[p.name] = _number(rule, p, value)
    return out


def _number(rule: str, p: Param, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise RuleParamError(f"{rule}.{p.name} must be a number, not {value!r}")
    if p.integer and int(value) != value:
        raise RuleParamError(f"{rule}.{p.name} must be a whole number, not {value!r}")
    if not p.low <= value <= p.high:
        raise RuleParamError(f"{rule}.{p.name} must be between {p.low:g} and {p.high:g}, not {value!r}")
    return int(value) if p.integer else float(value)


def _flag(rule: str, p: Param, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise RuleParamError(f"{rule}.{p.name} must be true or false, not {value!r}")


def _text(rule: str, p: Param, value: Any) -> str:
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise RuleParamError(
            f"{rule}.{p.name} must be a string of at most {MAX_TEXT} characters, not {value!r}"
        )
    if p.choices and value not in p.choices:
        raise RuleParamError(
            f"{rule}.{p.name} must be one of {', '.join(map(repr, p.choices))}, not {value!r}"
        )
    if p.name.endswith("regex"):
        for pattern in split_list(value):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise RuleParamError(
                    f"{rule}.{p.name}: {pattern!r} is not a regular expression ({exc})"
                ) from None
    return value


def split_list(text: str) -> list[str]:
    """SageMaker's "list of strings or a comma-separated string": ``"a, b"`` -> ``["a", "b"]``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def evidence(series: Series, limit: int = EVIDENCE_POINTS) -> list[list[float]]:
    """``[[t_ns, value], …]`` of at most ``limit`` evenly spread points (means over equal-count buckets)."""
    s = series.finite()
    n = len(s)
    if n <= limit:
        return [[int(a), round(float(b), 3)] for a, b in zip(s.t_ns.tolist(), s.values.tolist(), strict=True)]
    edges = np.linspace(0, n, limit + 1).astype(np.int64)
    means = np.add.reduceat(s.values, edges[:-1]) / np.diff(edges)
    mids = s.t_ns[(edges[:-1] + edges[1:] - 1) // 2]
    return [[int(a), round(float(b), 3)] for a, b in zip(mids.tolist(), means.tolist(), strict=True)]


def windows(n: int, patience: int, window: int) -> np.ndarray:
    """``[[lo, hi), …]`` index bounds of the consecutive windows of ``window`` datapoints after
    skipping ``patience``; a last partial window counts when it holds at least half a window."""
    if window < 1 or n <= patience:
        return np.zeros((0, 2), dtype=np.int64)
    lo = np.arange(patience, n, window, dtype=np.int64)
    hi = np.minimum(lo + window, n)
    keep = (hi - lo) * 2 >= window
    return np.stack([lo[keep], hi[keep]], axis=1)


def window_quantiles(
    values: np.ndarray,
    bounds: np.ndarray,
    q: float | Sequence[float],
    memo: WindowMemo | None = None,
    key: str = "",
) -> np.ndarray:
    """The ``q``-th percentile(s) of ``values`` in each window: shape ``(len(bounds),)`` for one ``q``,
    ``(len(q), len(bounds))`` for several.

    The windows of :func:`windows` are consecutive and all ``window`` long but perhaps the last, so
    the full ones are one ``(n_windows, window)`` view and one ``np.percentile(..., axis=1)`` call;
    the same numbers as one call per window (numpy's linear interpolation row by row). With a
    ``memo``, full windows it holds under ``key`` are taken from it and the rest computed."""
    qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
    out = np.empty((len(qs), len(bounds)), dtype=np.float64)
    if len(bounds):
        lo, hi = bounds[:, 0], bounds[:, 1]
        size = int(hi[0] - lo[0])
        full = int(np.count_nonzero(hi - lo == size))
        regular = bool(np.all(lo[1:] == hi[:-1])) and bool(np.all(hi[:full] - lo[:full] == size))
        if regular:
            start = int(lo[0])
            done = 0
            slot = f"{key}|{start}|{size}|{','.join(f'{x:g}' for x in qs.tolist())}"
            if memo is not None:
                have = memo.get(slot)
                if have is not None and have.shape[0] == len(qs) and have.shape[1] <= full:
                    done = have.shape[1]
                    out[:, :done] = have
                    memo.reused += done
            if full > done:
                block = values[start + done * size : start + full * size].reshape(full - done, size)
                out[:, done:full] = np.percentile(block, qs, axis=1)
            if memo is not None:
                memo.put(slot, out[:, :full].copy())
        else:
            full = 0
        for i, (a, b) in enumerate(bounds[full:].tolist(), start=full):
            out[:, i] = np.percentile(values[a:b], qs)
    return out[0] if np.ndim(q) == 0 else out


def earlier_index(sample_t: np.ndarray, t_ns: np.ndarray) -> np.ndarray:
    """Index in ``sample_t`` (sorted) of the nearest sample at or before each of ``t_ns`` (sorted),
    the first sample for times before it.

    The system columns share one clock, so ``t_ns`` is most often a run of ``sample_t`` itself; then
    the answer is that run's indices, without a binary search per point."""
    n, m = len(sample_t), len(t_ns)
    if 0 < m <= n:
        k = int(np.searchsorted(sample_t, t_ns[0], side="left"))
        if (
            k + m <= n
            and (k + m == n or sample_t[k + m] > t_ns[-1])
            and np.array_equal(sample_t[k : k + m], t_ns)
            and bool(np.all(t_ns[1:] > t_ns[:-1]))
        ):
            return np.arange(k, k + m)
    return np.clip(np.searchsorted(sample_t, t_ns, side="right") - 1, 0, max(n - 1, 0))


def runs(mask: np.ndarray) -> np.ndarray:
    """``[[first, last], …]`` index pairs of the runs of True in ``mask``."""
    if not mask.any():
        return np.zeros((0, 2), dtype=np.int64)
    m = np.concatenate([[False], mask, [False]]).astype(np.int8)
    d = np.diff(m)
    return np.stack([np.flatnonzero(d == 1), np.flatnonzero(d == -1) - 1], axis=1)


def not_enough(rule: str, data: RuleData, params: dict[str, Any], what: str) -> RuleResult:
    """InProgress while the job runs, else NoIssuesFound saying nothing could be checked."""
    if not data.finished:
        return RuleResult(rule, RuleStatus.InProgress, f"waiting for data: {what}", params)
    return RuleResult(rule, RuleStatus.NoIssuesFound, f"not enough data to evaluate: {what}", params)


def error(rule: str, params: dict[str, Any], reason: str) -> RuleResult:
    """``Error`` for want of data: the job has nothing this rule reads (``reason`` names it)."""
    return RuleResult(rule, RuleStatus.Error, reason, params, missing_data=True)


def pct(x: float) -> float:
    return round(float(x), 2)


def verdict(
    rule: str,
    params: dict[str, Any],
    findings: list[Finding],
    *,
    found: str,
    clean: str,
    figures: dict[str, Any] | None = None,
    evidence: dict[str, list[list[float]]] | None = None,
    recommendation: str = "",
) -> RuleResult:
    """The ending of a rule that ran: IssuesFound saying ``found`` when there are findings, else
    NoIssuesFound saying ``clean``."""
    status = RuleStatus.IssuesFound if findings else RuleStatus.NoIssuesFound
    reason = found if findings else clean
    return RuleResult(rule, status, reason, params, findings, figures or {}, evidence or {}, recommendation)


@dataclass
class PerGpu:
    """What a rule gathers GPU by GPU: findings, figures by GPU, evidence, and the GPUs it checked.

    tally = PerGpu()
    for gpu, s, bounds in tally.windowed(data.gpu_util, patience, window):
        ...                                  # the rule's own test of each window
        tally.flag(s, bounds, i, message, figures, f"{gpu}.util_percent")
    if not tally.checked:
        return not_enough(...)
    return tally.result(NAME, params, RECOMMENDATION, found=..., clean=f"checked {tally.checked} GPU(s)")
    """

    findings: list[Finding] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, list[list[float]]] = field(default_factory=dict)
    checked: int = 0

    def windowed(
        self, series: dict[str, Series], patience: int, window: int
    ) -> Iterator[tuple[str, Series, np.ndarray]]:
        """``(gpu, finite series, window bounds)`` of each GPU with at least one window after
        ``patience`` (:func:`windows`), each counted as checked; GPUs with none are skipped."""
        for gpu, raw in series.items():
            s = raw.finite()
            bounds = windows(len(s), patience, window)
            if len(bounds):
                self.checked += 1
                yield gpu, s, bounds

    def flag(
        self, s: Series, bounds: np.ndarray, i: int, message: str, figures: dict[str, Any], key: str
    ) -> None:
        """A finding over window ``i`` of ``s`` (its first to its last datapoint's time)."""
        lo, hi = bounds[i]
        self.findings.append(Finding(message, int(s.t_ns[lo]), int(s.t_ns[hi - 1]), figures, key))

    def result(
        self, rule: str, params: dict[str, Any], recommendation: str, *, found: str, clean: str
    ) -> RuleResult:
        """:func:`verdict` of what was gathered."""
        return verdict(
            rule,
            params,
            self.findings,
            found=found,
            clean=clean,
            figures=self.figures,
            evidence=self.evidence,
            recommendation=recommendation,
        )


@dataclass(frozen=True)
class RuleSpec:
    """A rule as the registry knows it."""

    name: str
    params: tuple[Param, ...]
    evaluate: Callable[[RuleData, dict[str, Any]], RuleResult]
    description: str

    @classmethod
    def of(
        cls,
        name: str,
        params: tuple[Param, ...],
        evaluate: Callable[[RuleData, dict[str, Any]], RuleResult],
        doc: str | None,
    ) -> RuleSpec:
        """A rule module's spec, described by the first line of its docstring (``doc``)."""
        return cls(name, params, evaluate, doc.splitlines()[0] if doc else name)


__all__ = [
    "EVIDENCE_POINTS",
    "MAX_FINDINGS",
    "Finding",
    "Param",
    "PerGpu",
    "RuleData",
    "RuleParamError",
    "RuleResult",
    "RuleSpec",
    "RuleStatus",
    "Series",
    "WindowMemo",
    "earlier_index",
    "error",
    "evidence",
    "not_enough",
    "pct",
    "patience_param",
    "percent_param",
    "resolve",
    "runs",
    "split_list",
    "verdict",
    "window_param",
    "window_quantiles",
    "windows",
]
