"""The torch side of ``ph.watch`` beyond its hooks: a step's values moved to the host (one copy
per device, or read in place on the CPU), a row's statistics as JSON values, a record as
TensorBoard scalars, and the process's rank.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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


DEFERRED = frozenset({"cuda"})
"""Device types whose values ``HostCopy`` moves without waiting (tests add ``"cpu"`` to run that
path on a machine without a GPU)."""


class HostCopy:
    """A step's tensors moved to the host. From a CUDA device each is a non-blocking copy into
    pinned memory, with one event recorded after them on the device's current stream, so the
    training thread never waits for the GPU to reach the step's end (a ``.cpu()`` would: the CPU
    then stops queueing work ahead of the GPU, every step). The host tensors hold the values once
    ``wait`` returns: the collector's thread calls it when it builds the record, or a later step
    does (``Watcher._check_landed``). Elsewhere, and with ``defer`` False, a plain copy; values
    already on the CPU are read in place (no copy, no kernel)."""

    def __init__(self, torch: Any, *, defer: bool) -> None:
        self.torch = torch
        self.defer = defer
        self.devices: set[Any] = set()  # the devices copies were started from
        self.events: list[Any] = []

    def __call__(self, t: Any) -> Any:
        if not (self.defer and t.device.type in DEFERRED):
            return t.to("cpu")
        host = self.torch.empty(t.shape, dtype=t.dtype, device="cpu", pin_memory=t.device.type == "cuda")
        host.copy_(t, non_blocking=True)
        self.devices.add(t.device)
        return host

    def scalars(self, values: list[Any]) -> list[Any]:
        """0-d tensors as host 0-d tensors: one stacked copy per device (float64: bf16 too)."""
        by_device: dict[Any, list[int]] = {}
        for i, v in enumerate(values):
            by_device.setdefault(v.device, []).append(i)
        out: list[Any] = [None] * len(values)
        for idx in by_device.values():
            if values[idx[0]].device.type == "cpu":
                for i in idx:
                    out[i] = values[i]
                continue
            host = self(self.torch.stack([values[i].to(self.torch.float64).reshape(()) for i in idx]))
            for j, i in enumerate(idx):
                out[i] = host[j]
        return out

    def vectors(self, tensors: Mapping[str, Any]) -> dict[str, Any]:
        """Integer vectors as host int64 tensors: one concatenated copy per device."""
        by_device: dict[Any, list[str]] = {}
        for name, t in tensors.items():
            by_device.setdefault(t.device, []).append(name)
        out: dict[str, Any] = {}
        for device, names in by_device.items():
            if device.type == "cpu":
                out |= {n: tensors[n] for n in names}
                continue
            parts = [tensors[n].to(self.torch.int64) for n in names]
            flat = self(self.torch.cat(parts))
            at = 0
            for name, part in zip(names, parts, strict=True):
                out[name] = flat[at : at + part.numel()]
                at += part.numel()
        return out

    @property
    def pending(self) -> bool:
        return bool(self.devices)

    def record(self) -> None:
        """One event per CUDA device, after the copies (called once all are started)."""
        cuda = self.torch.cuda
        for device in self.devices:
            if device.type == "cuda":
                event = cuda.Event()
                event.record(cuda.current_stream(device))
                self.events.append(event)

    def done(self) -> bool:
        return all(e.query() for e in self.events)

    def wait(self) -> None:
        for e in self.events:  # cudaEventSynchronize: from any thread, whatever its current device
            e.synchronize()


def deferred(t: Any) -> bool:
    """Whether ``t``'s values go to the host through ``HostCopy``'s deferred copies and a ``Ring``."""
    return t.device.type in DEFERRED


RING_VALUES = 1 << 16
"""Values a ``Ring`` holds (float64: 512 KiB of device memory) before it must be shipped."""
SHIP_S = 0.25
"""How often the watcher ships its rings to the host (at a step's end): the records, and the
SDK-side NaN check, lag the GPU by about this much."""


class Ring:
    """One device's small per-step values (the loss, a small batch of labels) gathered on the
    device, one copy each (a ``.item()`` would wait for the GPU; a copy to the host per step costs
    five to ten calls of 20-50 us each on an H200's host), until the watcher ships the ring to the
    host in one copy (``Watcher._ship``); then ``host`` holds its values once ``copy`` has landed.
    Values are float64: labels as class indices are exact."""

    def __init__(self, torch: Any, device: Any) -> None:
        self.buf = torch.empty(RING_VALUES, dtype=torch.float64, device=device)
        self.used = 0
        self.host: Any = None
        self.copy: HostCopy | None = None

    def put(self, t: Any) -> RingRef | None:
        """``t``'s values appended (one copy on the device), or None when the ring is full."""
        n = t.numel()
        if self.used + n > self.buf.numel():
            return None
        self.buf[self.used : self.used + n].copy_(t.detach().reshape(-1))
        ref = RingRef(self, self.used, n)
        self.used += n
        return ref

    def done(self) -> bool:
        return self.copy is not None and self.copy.done()

    def wait(self) -> None:
        assert self.copy is not None, "a ring is read only once shipped"
        self.copy.wait()


@dataclass(frozen=True, slots=True)
class RingRef:
    """Where a value (or a vector) sits in a ring."""

    ring: Ring
    at: int
    n: int

    def value(self) -> float:
        return float(self.ring.host[self.at])

    def ints(self) -> list[int]:
        return [int(v) for v in self.ring.host[self.at : self.at + self.n].tolist()]


def _dead_fraction(torch: Any, t: Any) -> Any:
    """``dead_frac`` of an activation on its device (``profilerhub_analysis.tensors``): the share
    of units (dimension 1, else elements) with under 1 % of their values > 0."""
    active = t.detach() > 0
    if active.numel() == 0:
        return torch.full((), math.nan, device=t.device)  # a fill: no copy from the host
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
