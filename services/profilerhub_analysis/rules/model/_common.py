"""What the model rules share: reaching the job's ``TensorTable``, picking tensors by collection,
regex and layer kind, the mode and ranks to read, and turning runs of steps into findings.

A model finding names its step range (``Finding.steps``, in the mode's own steps: ``ph.step``
numbers in train), its tensors, and the time range of those steps when the job marked them with
``ph.step`` (else the times the SDK reduced them), so the app links it to the Model page and the
timeline alike. Evidence series are ``[[step, value], …]`` (not ``t_ns``): ``EVIDENCE_AXIS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from profilerhub_analysis.rules.base import (
    EVIDENCE_POINTS,
    Finding,
    Param,
    RuleData,
    RuleResult,
    RuleStatus,
    error,
    runs,
    split_list,
)
from profilerhub_analysis.tensors import TensorTable, collection_of

T = TypeVar("T")
EVIDENCE_AXIS = "step"
"""``figures["evidence_axis"]`` of a model rule: its evidence series are by step."""
NO_TENSORS = (
    "no tensors recorded: call ph.watch(model, optimizer=opt, loss_fn=criterion) after ph.init "
    "(docs/debugging.md)"
)
KIND_PATTERNS = {
    "relu": re.compile(r"(?i)relu"),
    "tanh": re.compile(r"(?i)tanh"),
    "sigmoid": re.compile(r"(?i)sigmoid"),
}
"""Layer kinds by name, for a table that does not say each activation's module type."""
ACTIVATION_FUNCTIONS = re.compile(r"(?i)relu|tanh|sigmoid|gelu|silu|swish|mish|elu|softplus|softmax|act")
MODULE_KINDS = {
    "relu": ("ReLU", "ReLU6"),
    "tanh": ("Tanh", "Hardtanh"),
    "sigmoid": ("Sigmoid", "Hardsigmoid"),
}


def collections_param(description: str) -> Param:
    """SageMaker's ``collection_names``: ``"comma-separated collections " + description``."""
    return Param("collection_names", "", description=f"comma-separated collections {description}")


def regex_param(description: str) -> Param:
    """SageMaker's ``tensor_regex``: ``"comma-separated regexes " + description``."""
    return Param("tensor_regex", "", description=f"comma-separated regexes {description}")


def table_of(rule: str, data: RuleData, params: dict[str, Any]) -> TensorTable | RuleResult:
    """The job's tensors, or the result to answer without them (InProgress while the job runs)."""
    table = data.tensors
    if table is not None and len(table):
        return table
    if not data.finished:
        return RuleResult(rule, RuleStatus.InProgress, "waiting for tensors (ph.watch)", params)
    return error(rule, params, NO_TENSORS)


def short(rule: str, data: RuleData, params: dict[str, Any], what: str) -> RuleResult:
    """The job has tensors but not the ones this rule reads: InProgress while it runs, else an
    Error for want of data whose reason (``what``) says what to record."""
    if not data.finished:
        return RuleResult(rule, RuleStatus.InProgress, f"waiting for data: {what}", params)
    return error(rule, params, what)


def pick(table: TensorTable, params: dict[str, Any], default: Sequence[str]) -> list[str]:
    """Tensors named by ``collection_names`` and ``tensor_regex`` (SageMaker: the union of both
    sets), else those of the ``default`` collections (every collection when empty)."""
    collections = split_list(params.get("collection_names") or "")
    patterns = [re.compile(p) for p in split_list(params.get("tensor_regex") or "")]
    names = table.names()
    if not collections and not patterns:
        return [n for n in names if not default or collection_of(n) in default]
    return [n for n in names if collection_of(n) in collections or any(p.search(n) for p in patterns)]


def module_type(table: TensorTable, name: str) -> str | None:
    """The activation's module class (``"ReLU"``) when the table records it, else None."""
    get = getattr(table, "module_type", None)
    if get is None:
        return None
    try:
        value = get(name)
    except KeyError:
        return None
    return value if isinstance(value, str) and value else None


def of_kind(table: TensorTable, kind: str, regex: str = "") -> list[str]:
    """The activations of one kind of layer (``relu``, ``tanh``, ``sigmoid``): by module type
    when the table has it, else by name; ``regex`` (SageMaker's ``tensor_regex``) narrows them."""
    patterns = [re.compile(p) for p in split_list(regex)]
    out = []
    for name in table.names(collection="activations"):
        typ = module_type(table, name)
        hit = typ in MODULE_KINDS[kind] if typ is not None else bool(KIND_PATTERNS[kind].search(name))
        if hit and (not patterns or any(p.search(name) for p in patterns)):
            out.append(name)
    return out


def pre_activations(table: TensorTable) -> list[str]:
    """Activations of layers that are not activation functions (a Linear's or a Conv's output:
    the input of the activation after it)."""
    out = []
    for name in table.names(collection="activations"):
        typ = module_type(table, name)
        layer = name.split("/", 1)[-1]
        if typ is not None:
            if not any(typ in kinds for kinds in MODULE_KINDS.values()) and not ACTIVATION_FUNCTIONS.search(
                typ
            ):
                out.append(name)
        elif not ACTIVATION_FUNCTIONS.search(layer):
            out.append(name)
    return out


def train_mode(table: TensorTable, name: str | None = None) -> str:
    """``train`` when the table (or tensor) has train rows, else its first mode."""
    if name is None:
        modes = table.modes()
    else:
        modes = [m for m in table.modes() if len(table.steps(mode=m, name=name))]
    return "train" if "train" in modes or not modes else modes[0]


def ranks(table: TensorTable) -> list[int]:
    return table.ranks() or [0]


def label(name: str, rank: int, table: TensorTable) -> str:
    """A tensor as a finding names it: with its rank when the job has several."""
    return f"{name} (rank {rank})" if len(table.ranks()) > 1 else name


def step_times(data: RuleData, table: TensorTable, name: str, mode: str, rank: int,
               first: int, last: int) -> tuple[int | None, int | None]:  # fmt: skip
    """``(start_ns, end_ns)`` of steps ``first``..``last``: the ``ph.step`` ranges in train,
    else the times the SDK reduced those rows; None when neither is known."""
    nums = data.step_numbers
    if mode == "train" and len(nums):
        a, b = np.flatnonzero(nums == first), np.flatnonzero(nums == last)
        if len(a) and len(b):
            return int(data.step_start_ns[a[0]]), int(data.step_start_ns[b[-1]] + data.step_dur_ns[b[-1]])
    steps, _ = table.series(name, "numel", mode, rank)
    ts = table.wall_times(name, mode, rank)
    hit = ts[(steps >= first) & (steps <= last)]
    hit = hit[hit > 0]
    if not len(hit):
        return None, None
    return int(hit.min()), int(hit.max())


def step_runs(steps: np.ndarray, mask: np.ndarray) -> list[tuple[int, int, int, int]]:
    """``(first index, last index, first step, last step)`` of each run of True in ``mask``."""
    return [(a, b, int(steps[a]), int(steps[b])) for a, b in runs(np.asarray(mask, bool)).tolist()]


def finding(
    data: RuleData,
    table: TensorTable,
    message: str,
    tensors: Sequence[str],
    mode: str,
    rank: int,
    first: int,
    last: int,
    figures: dict[str, Any],
) -> Finding:
    """A model finding over steps ``first``..``last`` of ``tensors`` (the first gives the times)."""
    start, end = step_times(data, table, tensors[0], mode, rank, first, last) if tensors else (None, None)
    if table.ranks() != [0]:  # a rank of several (a rank job's table may hold only another's rows)
        figures = {"rank": rank, **figures}
    if mode != "train" and tensors:  # where on the train axis: the train step current then
        steps, _ = table.series(tensors[0], "numel", mode, rank)
        glob = table.global_steps(tensors[0], mode, rank)[steps == first]
        if len(glob):
            figures = {**figures, "train_step": int(glob[0])}
    return Finding(
        message, start, end, figures, tensors[0] if tensors else None, (first, last), mode, list(tensors)
    )


def step_evidence(steps: np.ndarray, values: np.ndarray, limit: int = EVIDENCE_POINTS) -> list[list[float]]:
    """``[[step, value], …]`` of at most ``limit`` points, evenly picked (finite values only)."""
    ok = np.isfinite(values)
    s, v = np.asarray(steps)[ok], np.asarray(values, np.float64)[ok]
    if len(s) > limit:
        keep = np.unique(np.linspace(0, len(s) - 1, limit).round().astype(np.int64))
        s, v = s[keep], v[keep]
    return [[int(a), float(f"{b:.6g}")] for a, b in zip(s.tolist(), v.tolist(), strict=True)]


def sig(x: float) -> str:
    """A figure in a message: 3 significant digits (``3e-10``, ``0.142``)."""
    return f"{x:.3g}"


def fig(x: float) -> float | None:
    """A figure in ``figures``: 4 significant digits, None for NaN."""
    return float(f"{x:.4g}") if np.isfinite(x) else None


def outcome(
    rule: str,
    params: dict[str, Any],
    findings: list[Finding],
    *,
    checked: int,
    what: str,
    found: str | Callable[[list[Finding]], str],
    recommendation: str,
    figures: dict[str, Any] | None = None,
    evidence: dict[str, list[list[float]]] | None = None,
) -> RuleResult:
    """IssuesFound (``found``: the reason, or a function of the sorted findings that makes it;
    the first finding's step leads it) or NoIssuesFound saying how many tensors (``what``) were
    checked; findings ordered by their first step."""
    findings.sort(key=train_step)
    figures = {"checked": checked, "evidence_axis": EVIDENCE_AXIS, **(figures or {})}
    if not findings:
        reason = f"checked {checked} {what}: nothing triggered the rule"
        return RuleResult(rule, RuleStatus.NoIssuesFound, reason, params, figures=figures)
    first = train_step(findings[0])
    figures["first_step"] = first
    return RuleResult(
        rule,
        RuleStatus.IssuesFound,
        f"at step {first}: {found if isinstance(found, str) else found(findings)}",
        params,
        findings,
        figures,
        evidence or {},
        recommendation,
    )


class Collected:
    """One model rule's run over the job's tensors (``table``): the findings and evidence it
    gathers over tensors, ranks and modes, and its answer (``result``)."""

    def __init__(
        self, rule: str, data: RuleData, params: dict[str, Any], table: TensorTable, recommendation: str
    ) -> None:
        self.rule, self.data, self.params, self.table = rule, data, params, table
        self.recommendation = recommendation
        self.findings: list[Finding] = []
        self.evidence: dict[str, list[list[float]]] = {}

    def each(self, names: Sequence[T], modes: Sequence[str] = ("train",)) -> Iterator[tuple[str, int, T]]:
        """``(mode, rank, name)`` of every tensor in ``names`` (or of whatever stands for one) on
        every rank, mode by mode."""
        for mode in modes:
            for rank in ranks(self.table):
                for name in names:
                    yield mode, rank, name

    def add(self, message: str, tensors: Sequence[str], mode: str, rank: int, first: int, last: int,
            figures: dict[str, Any]) -> None:  # fmt: skip
        """A finding over steps ``first``..``last`` (see ``finding``)."""
        self.findings.append(
            finding(self.data, self.table, message, tensors, mode, rank, first, last, figures)
        )

    def flag(self, message: str, name: str, mode: str, rank: int, first: int, last: int,
             figures: dict[str, Any], steps: np.ndarray, values: np.ndarray,
             tensors: Sequence[str] | None = None) -> None:  # fmt: skip
        """A finding over steps ``first``..``last`` of tensor ``name`` (and of ``tensors`` when
        given), whose ``values`` by ``steps`` are its evidence."""
        self.add(message, tensors or [name], mode, rank, first, last, figures)
        self.see(name, steps, values)

    def see(self, key: str, steps: np.ndarray, values: np.ndarray, limit: int = 5) -> None:
        """Keep ``values`` by step as the evidence ``key`` (the first ``limit`` keys only)."""
        if key not in self.evidence and len(self.evidence) < limit:
            self.evidence[key] = step_evidence(steps, np.asarray(values, np.float64))

    def tensors(self) -> list[str]:
        """The first tensor of each finding, once each, in order."""
        return list(dict.fromkeys(f.evidence for f in self.findings if f.evidence))

    def short(self, what: str) -> RuleResult:
        """:func:`short`: the job lacks the tensors this rule reads (``what`` says which)."""
        return short(self.rule, self.data, self.params, what)

    def result(self, **kwargs: Any) -> RuleResult:
        """``outcome`` of what was collected (its keyword arguments but ``evidence`` and
        ``recommendation``)."""
        return outcome(
            self.rule,
            self.params,
            self.findings,
            evidence=self.evidence,
            recommendation=self.recommendation,
            **kwargs,
        )


Body = Callable[[Collected, dict[str, Any]], RuleResult]


def tensor_rule(
    rule: str, recommendation: str
) -> Callable[[Body], Callable[[RuleData, dict[str, Any]], RuleResult]]:
    """A model rule's ``evaluate(data, params)`` from its body ``(out, params)``, where ``out`` is
    a :class:`Collected` over the job's tensors (``out.table``); a job without tensors gets
    :func:`table_of`'s answer and the body does not run."""

    def wrap(body: Body) -> Callable[[RuleData, dict[str, Any]], RuleResult]:
        def evaluate(data: RuleData, params: dict[str, Any]) -> RuleResult:
            table = table_of(rule, data, params)
            if isinstance(table, RuleResult):
                return table
            return body(Collected(rule, data, params, table, recommendation), params)

        evaluate.__doc__ = body.__doc__
        return evaluate

    return wrap


def train_step(f: Finding) -> int:
    """Where a finding starts on the train axis (an eval finding: the train step it ran at)."""
    at = f.figures.get("train_step")
    return int(at) if isinstance(at, int) else (f.steps or (0, 0))[0]


def tensor_list(names: Iterable[str], limit: int = 3) -> str:
    """``a, b, c and 4 more``: the layers a reason names."""
    names = list(names)
    head = ", ".join(n.split("/", 1)[-1] for n in names[:limit])
    return head + (f" and {len(names) - limit} more" if len(names) > limit else "")


__all__ = [
    "EVIDENCE_AXIS",
    "Collected",
    "collections_param",
    "NO_TENSORS",
    "finding",
    "fig",
    "label",
    "module_type",
    "of_kind",
    "outcome",
    "pick",
    "pre_activations",
    "regex_param",
    "ranks",
    "short",
    "sig",
    "step_evidence",
    "step_runs",
    "step_times",
    "table_of",
    "tensor_rule",
    "tensor_list",
    "train_mode",
    "train_step",
]
