"""The torch side of ``ph.watch`` beyond its hooks: a step's values moved to the host (one copy
per device, or read in place on the CPU), a row's statistics as JSON values, a record as
TensorBoard scalars, and the process's rank.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._run import Run

TB_STATS = ("l2", "mean", "std", "min", "max", "zero_frac")
_DBL_MAX = 1.7976931348623157e308


def _to_tensorboard(run: Run, record: dict[str, Any]) -> None:
    """One record as TensorBoard scalars (``<name>/<stat>``, train steps; other modes under
    ``<mode>/<name>/<stat>``) and a histogram of |x| per tensor (its buckets are ours)."""
    from ._reduce import HIST_EDGES, STATS

    prefix = "" if record["mode"] == "train" else f"{record['mode']}/"
    step = int(record["step"])
    limits = [0.0, *HIST_EDGES, _DBL_MAX]
    for name, stats, counts in zip(record["names"], record["stats"], record["hist"], strict=True):
        values = {s: (math.nan if v is None else float(v)) for s, v in zip(STATS, stats, strict=False)}
        for stat in TB_STATS:
            if math.isfinite(values[stat]):
                run.tensorboard.add(f"{prefix}{name}/{stat}", values[stat], step)
        num = float(sum(counts))
        if num:
            hi = max(abs(values["min"]), abs(values["max"]))
            histogram = (0.0, hi, num, values["l1"], values["l2"] ** 2, limits, [float(c) for c in counts])
            run.tensorboard.add_histogram(f"{prefix}{name}", histogram, step)


def _one_copy(torch: Any, values: list[Any]) -> list[Any]:
    """Scalars moved to the host with one copy per device."""
    by_device: dict[Any, list[int]] = {}
    for i, v in enumerate(values):
        by_device.setdefault(v.device, []).append(i)
    out: list[Any] = [None] * len(values)
    for idx in by_device.values():
        host = torch.stack([values[i].to(torch.float64).reshape(()) for i in idx]).to("cpu")  # bf16 too
        for j, i in enumerate(idx):
            out[i] = host[j]
    return out


def _host_floats(torch: Any, values: list[Any]) -> list[float]:
    """0-d tensors as floats: read in place on the CPU (no copy, no kernel), else one copy per device."""
    if all(v.device.type == "cpu" for v in values):
        return [float(v) for v in values]
    return [float(v) for v in _one_copy(torch, values)]


def _host_lists(torch: Any, tensors: Mapping[str, Any]) -> dict[str, list[int]]:
    """Integer vectors as lists: read in place on the CPU, else moved with one copy per device."""
    by_device: dict[Any, list[str]] = {}
    for name, t in tensors.items():
        by_device.setdefault(t.device, []).append(name)
    out: dict[str, list[int]] = {}
    for device, names in by_device.items():
        if device.type == "cpu":
            out |= {n: tensors[n].tolist() for n in names}
            continue
        parts = [tensors[n].to(torch.int64) for n in names]
        flat = torch.cat(parts).to("cpu").tolist()
        at = 0
        for name, part in zip(names, parts, strict=True):
            out[name] = flat[at : at + part.numel()]
            at += part.numel()
    return out


def _dead_fraction(torch: Any, t: Any) -> Any:
    """``dead_frac`` of an activation on its device (``profilerhub_analysis.tensors``): the share
    of units (dimension 1, else elements) with under 1 % of their values > 0."""
    active = t.detach() > 0
    if active.numel() == 0:
        return torch.tensor(math.nan, device=t.device)
    if active.dim() < 2:
        return (~active).float().mean()
    dims = [d for d in range(active.dim()) if d != 1]
    per_unit = active.numel() // active.shape[1]
    return (active.sum(dim=dims) < 0.01 * per_unit).float().mean()


def _stats(row: list[float], dead: float) -> list[Any]:
    """A row's statistics as JSON values (``_enc`` each, unless all are finite: most rows)."""
    head: list[Any] = row[:10]
    if math.isfinite(sum(head)):
        head.append(_enc(dead))
        return head
    return [_enc(v) for v in head] + [_enc(dead)]


def _enc(v: float) -> float | str | None:
    if v != v:
        return None
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return v


def _tensors_of(torch: Any, output: Any) -> list[Any]:
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, list | tuple):
        return [t for t in output if isinstance(t, torch.Tensor)]
    if isinstance(output, Mapping):
        return [t for t in output.values() if isinstance(t, torch.Tensor)]
    return []


def _dynamo_disable(torch: Any) -> Callable[[Any], Any]:
    """Our hooks run eagerly inside a compiled model (a graph break there, not a traced hook),
    and cost an eager model next to nothing.

    ``torch._dynamo.disable``'s wrapper swaps dynamo's frame callback out and back on every call,
    about 45 µs a call on a cold cache after a step's kernels (measured in a loss hook): twice a
    step at the defaults, a third of what ``ph.watch`` cost an unsaved step. So each hook is a
    small function dynamo skips (``skip``: it is never traced or inlined, a graph break where a
    compiled region calls it), which goes through the full wrapper only while a callback is set
    (a compiled region is running: its callees would be traced otherwise), and else calls the
    hook as is."""
    try:
        from torch._C._dynamo.eval_frame import get_eval_frame_callback
        from torch._dynamo.decorators import skip

        disable = torch._dynamo.disable
    except Exception:
        return lambda f: f

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        disabled = disable(fn)

        def hook(*args: Any) -> Any:
            if get_eval_frame_callback() is None:
                return fn(*args)
            return disabled(*args)

        return skip(hook)

    return wrap


def rank_of(torch: Any) -> int:
    """This process's rank: torch.distributed's once it is initialised, else ``$RANK``, else 0."""
    try:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:
        pass
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0
