"""``ph.watch``: reductions of a PyTorch model's weights, gradients, activations and losses.

Hooks, registered once by ``watch``:

- the watched model's forward pre-hook: starts a new step in the eval/predict modes (or in train
  when the script does not use ``ph.step``), and reads the weights at a saved step when there is
  no optimizer;
- the optimizer's step pre-hook (``register_step_pre_hook``), on only while a step that saves
  parameters runs (``_arm_optimizer``): gradients and weights at a saved step, where they are
  final (after accumulation, before ``zero_grad``), and a copy of the
  weights for ``optimizer_variables``; its post-hook reduces the update (weight after minus
  before) and records each group's learning rate;
- without an optimizer, each parameter's ``register_post_accumulate_grad_hook`` (gradients);
- a forward hook on the modules whose outputs are collected (``activations``) and on ``loss_fn``
  (its output is ``losses/loss``; its second argument, the target, is ``labels/loss``, with a
  ``bincount`` per step for integer class indices: ClassImbalance reads those).

Each saved tensor becomes one row (``_reduce``) on its device; at the step's end (``ph.step``'s
exit, the next step, a mode change, ``finish``) the step's rows are copied to the host once per
device and appended as one record to the run's ``tensors`` buffer, which the collector writes as
``tensors/*.jsonl.gz`` chunks like every other record (delivery and spill included). From a GPU
nothing is waited for: the copies are started at the step's end and read by the collector
(``HostCopy``); the loss and small label batches go, one copy each, into a ring on the device
that is shipped to the host every ``SHIP_S`` (``Ring``), and the steps wait in ``_held`` for it.
Every hook catches its own errors: a failing reduction is logged once and training goes on.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _watch_host
from ._clock import now_ns
from ._log import log_once, logger
from ._reduce import N_BINS, fold, partial
from ._watch_host import (
    HostCopy,
    Ring,
    RingRef,
    _dead_fraction,
    _dynamo_disable,
    _tensors_of,
    _to_tensorboard,
)
from ._watch_record import StepValues

if TYPE_CHECKING:
    from ._run import Run

MODES = ("train", "eval", "predict")
COLLECTIONS = ("weights", "biases", "gradients", "activations", "losses", "optimizer_variables", "labels")
EVERY_STEP = ("losses", "labels")  # saved every step by default
DEFAULT_EVERY = 100
RELU = re.compile(r"(?i)relu")
"""Activations whose module class or name match get ``dead_frac`` (four kernels a layer); others NaN."""
HOST_LABELS = 4096
"""Integer labels of at most this many elements on the CPU are counted on the host (``_add_labels``)."""
FULL_TENSORS_MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class SaveConfig:
    """When a collection is saved, counted in its mode's steps (smdebug's ``SaveConfig``).

    ``steps``: exactly these steps (``every``, ``start_step`` and ``end_step`` are then ignored);
    else every ``every``-th step from ``start_step`` (included) to ``end_step`` (excluded)."""

    every: int = DEFAULT_EVERY
    start_step: int = 0
    end_step: int | None = None
    steps: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.every, int) or self.every < 1:
            raise ValueError(f"SaveConfig.every must be an integer >= 1, got {self.every!r}")
        if self.start_step < 0 or (self.end_step is not None and self.end_step < self.start_step):
            raise ValueError("SaveConfig needs 0 <= start_step <= end_step")
        object.__setattr__(self, "steps", tuple(sorted(int(s) for s in self.steps)))

    def saves(self, step: int) -> bool:
        if self.steps:
            return step in self.steps
        if step < self.start_step or (self.end_step is not None and step >= self.end_step):
            return False
        return (step - self.start_step) % self.every == 0

    @classmethod
    def of(cls, value: SaveConfig | int | Mapping[str, Any]) -> SaveConfig:
        """A ``SaveConfig`` from itself, an interval or its fields as a dict (smdebug's names
        ``save_interval``/``save_steps`` accepted too)."""
        if isinstance(value, SaveConfig):
            return value
        if isinstance(value, bool) or not isinstance(value, int | Mapping):
            raise ValueError(f"a save config is an interval, a dict or a SaveConfig, got {value!r}")
        if isinstance(value, int):
            return cls(every=value)
        fields = dict(value)
        aliases = {"save_interval": "every", "save_steps": "steps"}
        fields = {aliases.get(k, k): v for k, v in fields.items()}
        unknown = set(fields) - {"every", "start_step", "end_step", "steps"}
        if unknown:
            raise ValueError(f"unknown SaveConfig field(s) {sorted(unknown)}")
        return cls(**fields)


def _patterns(value: str | Sequence[str] | None, what: str) -> list[re.Pattern[str]]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    try:
        return [re.compile(p) for p in items]
    except (re.error, TypeError) as exc:
        raise ValueError(f"{what}: not a regular expression ({exc})") from None


@dataclass(frozen=True)
class FullTensors:
    """``full_tensors=``: tensors (regexes on full names) saved whole at the steps they are saved
    (or only at ``steps``), at most ``max_bytes_per_step`` per step."""

    include: tuple[re.Pattern[str], ...]
    steps: tuple[int, ...] = ()
    max_bytes_per_step: int = FULL_TENSORS_MAX_BYTES

    @classmethod
    def of(cls, value: Any) -> FullTensors | None:
        if value is None:
            return None
        if isinstance(value, str) or (isinstance(value, Sequence) and not isinstance(value, Mapping)):
            return cls(tuple(_patterns(value, "full_tensors")))
        if isinstance(value, Mapping):
            unknown = set(value) - {"include", "steps", "max_bytes_per_step"}
            if unknown or "include" not in value:
                raise ValueError(
                    'full_tensors is a list of regexes or {"include", "steps", "max_bytes_per_step"}'
                )
            limit = int(value.get("max_bytes_per_step", FULL_TENSORS_MAX_BYTES))
            if limit < 1:
                raise ValueError("full_tensors.max_bytes_per_step must be >= 1")
            steps = tuple(int(s) for s in value.get("steps", ()))
            return cls(tuple(_patterns(value["include"], "full_tensors.include")), steps, limit)
        raise ValueError(f"full_tensors: unsupported value {value!r}")

    def wants(self, name: str, step: int) -> bool:
        return (not self.steps or step in self.steps) and any(p.search(name) for p in self.include)


def save_configs(
    collections: Sequence[str] | Mapping[str, Any] | None,
    every: SaveConfig | int | Mapping[str, Any] | None,
    *,
    optimizer: bool,
) -> dict[str, SaveConfig]:
    """The collections to save and when: ``collections`` names them (a dict gives each its own
    save config); the default is weights, biases, gradients, losses and labels, and
    optimizer_variables with an optimizer. ``every`` is the save config of every collection without
    its own; without it, collections are saved every 100 steps, losses and labels every step."""
    if collections is None:
        names: dict[str, Any] = dict.fromkeys(("weights", "biases", "gradients", "losses", "labels"))
        if optimizer:
            names["optimizer_variables"] = None
    elif isinstance(collections, str):
        raise ValueError('collections is a list of names, e.g. ["weights", "gradients"]')
    elif isinstance(collections, Mapping):
        names = dict(collections)
    else:
        names = dict.fromkeys(collections)
    unknown = [n for n in names if n not in COLLECTIONS]
    if unknown:
        raise ValueError(f"unknown collection(s) {unknown}; known: {', '.join(COLLECTIONS)}")
    base = SaveConfig.of(every) if every is not None else None
    out = {}
    for name, own in names.items():
        if own is not None:
            out[name] = SaveConfig.of(own)
        elif base is not None:
            out[name] = base
        else:
            out[name] = SaveConfig(every=1 if name in EVERY_STEP else DEFAULT_EVERY)
    return out


def _host_value(v: Any, read: Iterator[Any]) -> float:
    """A scalar's value: a number as it is, from its ring, or the next of the copied tensors."""
    if isinstance(v, RingRef):
        return v.value()
    return float(v if isinstance(v, int | float) else next(read))


@dataclass(frozen=True)
class _Landed:
    """Whether all the copies a step waits for (its own, its rings') have landed."""

    waits: list[Any]

    def done(self) -> bool:
        return all(w.done() for w in self.waits)


def _classes_of(logits: Any, target: Any) -> int | None:
    """The number of classes of a classification loss's input (``(N, C)`` or ``(N, C, d1, ...)``
    beside a target of ``(N)`` or ``(N, d1, ...)``), else None."""
    shape = getattr(logits, "shape", None)
    if shape is None or len(shape) < 2 or len(shape) != target.dim() + 1 or not logits.is_floating_point():
        return None
    return int(shape[1])


def _scatter_counts(torch: Any, flat: Any, classes: int) -> Any:
    """Each class's count among ``flat``'s labels on its device, with no read back: values out of
    ``[0, classes)`` (``ignore_index``) go to a last bin that is dropped."""
    idx = torch.where((flat >= 0) & (flat < classes), flat, classes).to(torch.int64)
    counts = torch.zeros(classes + 1, dtype=torch.int64, device=flat.device)
    return counts.scatter_add_(0, idx, torch.ones_like(idx))[:classes]


class Watcher:
    """The hooks of one ``ph.watch`` call and the rows of the step they are collecting."""

    def __init__(
        self,
        run: Run,
        torch: Any,
        model: Any,
        *,
        optimizer: Any = None,
        loss_fn: Any = None,
        configs: dict[str, SaveConfig],
        include: Sequence[re.Pattern[str]] = (),
        exclude: Sequence[re.Pattern[str]] = (),
        full: FullTensors | None = None,
        tensorboard: bool = False,
    ) -> None:
        self.run = run
        self.torch = torch
        self.configs = configs
        self.include = list(include)
        self.exclude = list(exclude)
        self.full = full
        self.tensorboard = tensorboard
        self.handles: list[Any] = []
        self._opt_handles: list[Any] = []  # the optimizer's, on at saved steps (_arm_optimizer)
        self._class_dtypes = {torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8}
        self._lock = threading.Lock()
        self._key: tuple[str, int] | None = None  # (mode, step) the pending rows belong to
        self._rows: list[tuple[list[str], list[list[int]], Any, bool]] = []
        self._scalars: list[tuple[str, Any]] = []
        self._dead: list[tuple[str, Any]] = []  # activations' dead_frac, a 0-d tensor each
        self._classes: dict[str, Any] = {}  # label name -> its bincount on the device
        self._labels: dict[str, Any] = {}  # label name -> its values read on the host, or in a ring
        self._label_shapes: dict[str, list[int]] = {}
        self._types: dict[str, str] = {}  # activation name -> its module's class
        self._full_bytes = 0
        self._weights_done: tuple[str, int] | None = None
        self._before: dict[str, Any] = {}
        self._buffers: list[Any] | None = None  # the weights before the step, reused while saved
        self._wanted_of: dict[str, bool] = {}
        self._saves_of: tuple[int, dict[str, bool]] = (-1, {})  # one step's decisions, made once
        self._rank: int | None = None  # looked up again at each step with rows (see _emit)
        # From a GPU: the rings of small values, the steps waiting for the next shipment, and
        # the shipped steps whose NaN/Inf is not yet looked at (one list per shipment).
        self._rings: dict[Any, Ring] = {}
        self._held: list[StepValues] = []
        self._shipped_at = time.monotonic()
        self._unchecked: list[list[StepValues]] = []
        self.removed = False
        root = getattr(model, "_orig_mod", model)  # a torch.compile'd module: hook the original
        self.compiled = root is not model
        self.params = [(n, p) for n, p in root.named_parameters()]
        self.optimizer = optimizer
        self._own_hooks(model, root, optimizer, loss_fn)

    # -- which tensors -------------------------------------------------------------------------
    def _wanted(self, name: str) -> bool:
        hit = self._wanted_of.get(name)
        if hit is None:
            hit = self._wanted_of[name] = self._wanted_uncached(name)
        return hit

    def _wanted_uncached(self, name: str) -> bool:
        if any(p.search(name) for p in self.exclude):
            return False
        collection = name.split("/", 1)[0]
        return collection in self.configs or any(p.search(name) for p in self.include)

    def _collects_output(self, name: str, module: Any) -> bool:
        """Activations: every leaf module when the collection is on, any module ``include`` names."""
        full = f"activations/{name}"
        if any(p.search(full) for p in self.exclude):
            return False
        if any(p.search(full) for p in self.include):
            return True
        return "activations" in self.configs and not any(True for _ in module.children())

    def _saves(self, collection: str, step: int) -> bool:
        at, decided = self._saves_of
        if at != step:
            at, decided = self._saves_of = (step, {})
        hit = decided.get(collection)
        if hit is None:
            hit = decided[collection] = self._saves_uncached(collection, step)
        return hit

    def _saves_params(self, step: int) -> bool:
        """Whether the optimizer's hooks have anything to do at ``step``."""
        return any(self._saves(c, step) for c in ("weights", "biases", "gradients", "optimizer_variables"))

    def _saves_uncached(self, collection: str, step: int) -> bool:
        cfg = self.configs.get(collection)
        if cfg is None:
            return bool(self.include) and SaveConfig().saves(step)
        return cfg.saves(step)

    def _param_name(self, name: str) -> str:
        return f"biases/{name}" if name.endswith("bias") else f"weights/{name}"

    # -- hooks ---------------------------------------------------------------------------------
    def _own_hooks(self, model: Any, root: Any, optimizer: Any, loss_fn: Any) -> None:
        disable = _dynamo_disable(self.torch)
        self.handles.append(model.register_forward_pre_hook(disable(self._on_forward)))
        acts = [(name, m) for name, m in root.named_modules() if name and self._collects_output(name, m)]
        for name, module in acts:
            self.handles.append(module.register_forward_hook(disable(self._activation_hook(name))))
        if loss_fn is not None:
            if hasattr(loss_fn, "register_forward_hook"):
                self.handles.append(loss_fn.register_forward_hook(disable(self._on_loss)))
            else:
                logger.warning(
                    "profilerhub: watch(loss_fn=...) needs a torch.nn.Module (e.g. nn.CrossEntropyLoss()); "
                    "losses are not collected"
                )
        if optimizer is not None:
            self._arm_optimizer(self.current_key()[1])
        else:
            for name, p in self.params:
                if p.requires_grad and self._wanted(f"gradients/{name}"):
                    self.handles.append(p.register_post_accumulate_grad_hook(self._grad_hook(name)))

    def _arm_optimizer(self, step: int) -> None:
        """The optimizer's hooks are on only for the steps whose parameters are saved: on the
        others (99 in 100 at the defaults) its step calls nothing of ours, where two hooks that
        returned at once cost it ~35 µs (the first Python to run after a backward pays for the
        caches that backward left cold)."""
        wanted = self.optimizer is not None and not self.removed and self._saves_params(step)
        if wanted and not self._opt_handles:
            self._opt_handles = [
                self.optimizer.register_step_pre_hook(self._on_optimizer_pre),
                self.optimizer.register_step_post_hook(self._on_optimizer_post),
            ]
        elif not wanted and self._opt_handles:
            for h in self._opt_handles:
                h.remove()
            self._opt_handles = []
            self._before, self._buffers = {}, None

    def remove(self) -> None:
        for h in [*self.handles, *self._opt_handles]:
            h.remove()
        self.handles, self._opt_handles = [], []
        self.removed = True
        self.flush(final=True)

    def _guard(self, what: str, fn: Callable[[], None]) -> None:
        if not self.run.enabled and what != "flush":
            return
        try:
            fn()
        except Exception as exc:  # never into the training loop
            self._hook_failed(what, exc)

    def _hook_failed(self, what: str, exc: Exception) -> None:
        log_once(
            f"watch-{what}",
            logging.WARNING,
            "profilerhub: watch: %s failed (%s); training goes on",
            what,
            exc,
        )

    # -- steps ---------------------------------------------------------------------------------
    def current_key(self) -> tuple[str, int]:
        return (
            self._key if self._key is not None else (self.run.mode, self.run.mode_steps.get(self.run.mode, 0))
        )

    def start_step(self, mode: str, step: int) -> None:
        """A new (mode, step): what is pending belongs to the previous one and goes out."""
        if self._key != (mode, step):
            self.flush()
            with self._lock:
                self._key = (mode, step)
                self._full_bytes = 0
            if self.optimizer is not None and self.run.enabled:
                try:
                    self._arm_optimizer(step)
                except Exception as exc:
                    self._hook_failed("optimizer", exc)

    def _on_forward(self, module: Any, args: Any) -> None:
        self._guard("forward", self._forward_started)

    def _forward_started(self) -> None:
        run = self.run
        if run.mode != "train" or run.current_step is None:
            step = run.mode_steps.get(run.mode, -1) + 1
            run.mode_steps[run.mode] = step
            self.start_step(run.mode, step)
        elif self._key != ("train", run.current_step):
            self.start_step("train", run.current_step)
        if self.optimizer is None:
            mode, step = self.current_key()
            if self._weights_done != (mode, step):
                self._weights_done = (mode, step)
                self._reduce_params(step, grads=False)

    def _reduce_params(self, step: int, *, grads: bool) -> None:
        saves = {c: self._saves(c, step) for c in ("weights", "biases")}
        with_grads = grads and self._saves("gradients", step)
        if not (with_grads or any(saves.values())):
            return  # most steps: nothing to look at
        tensors: list[tuple[str, Any]] = []
        for name, p in self.params:
            wname = self._param_name(name)
            if saves[wname.split("/", 1)[0]] and self._wanted(wname):
                tensors.append((wname, p))
            if with_grads and p.grad is not None and self._wanted(f"gradients/{name}"):
                tensors.append((f"gradients/{name}", p.grad))
        self.add(tensors)

    def _on_optimizer_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self._saves_params(self.current_key()[1]):  # armed for another step's key
            self._before, self._buffers = {}, None
            return

        def pre() -> None:
            mode, step = self.current_key()
            self._reduce_params(step, grads=True)
            self._before = {}
            if not self._saves("optimizer_variables", step):
                self._buffers = None  # kept only while consecutive steps save the updates
                return
            chosen = [
                (n, p.detach()) for n, p in self.params if self._wanted(f"optimizer_variables/{n}:update")
            ]
            if self._buffers is None or len(self._buffers) != len(chosen):
                self._buffers = [p.clone() for _, p in chosen]
            else:  # one copy into the buffers of the last step: no allocation (page faults)
                self.torch._foreach_copy_(self._buffers, [p for _, p in chosen])
            self._before = {n: b for (n, _), b in zip(chosen, self._buffers, strict=True)}

        self._guard("optimizer", pre)

    def _on_optimizer_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self._before:
            return

        def post() -> None:
            before, self._before = self._before, {}
            if not before:
                return
            names = [n for n, _ in self.params if n in before]
            bufs = [before[n] for n in names]
            params = dict(self.params)
            # In place, in the buffers: before - after, the update (after - before) negated; its
            # rows are flipped on the host (``_emit``), which saves a pass over every parameter.
            self.torch._foreach_sub_(bufs, [params[n].detach() for n in names])
            updates = [(f"optimizer_variables/{n}:update", b) for n, b in zip(names, bufs, strict=True)]
            self.add(updates, negated=True)
            for i, group in enumerate(optimizer.param_groups):
                lr = group.get("lr")
                if isinstance(lr, int | float) or hasattr(lr, "item"):
                    self.add_scalar(
                        f"optimizer_variables/group{i}:lr", self.torch.as_tensor(lr, dtype=self.torch.float64)
                    )

        self._guard("optimizer", post)

    def _grad_hook(self, name: str) -> Callable[[Any], None]:
        gname = f"gradients/{name}"

        def hook(p: Any) -> None:
            def reduce() -> None:
                mode, step = self.current_key()
                if p.grad is not None and self._saves("gradients", step):
                    self.add([(gname, p.grad)])

            self._guard("gradients", reduce)

        return hook

    def _activation_hook(self, name: str) -> Callable[[Any, Any, Any], None]:
        def hook(module: Any, args: Any, output: Any) -> None:
            def reduce() -> None:
                mode, step = self.current_key()
                if not self._saves("activations", step):
                    return
                outs = [t for t in _tensors_of(self.torch, output) if t.is_floating_point()]
                names = (
                    [f"activations/{name}"]
                    if len(outs) == 1
                    else [f"activations/{name}:output_{i}" for i in range(len(outs))]
                )
                pairs = [(n, t) for n, t in zip(names, outs, strict=True) if self._wanted(n)]
                kind = type(module).__name__
                relu = bool(RELU.search(kind) or RELU.search(name))  # dead units: what DeadRelu reads
                # Reduced here, not with the step's others at its end: a next in-place op (an
                # inplace ReLU after a norm) would have changed the values by then.
                with self._lock:
                    for n, t in pairs:
                        self._types[n] = kind
                        if relu:
                            self._dead.append((n, _dead_fraction(self.torch, t)))
                self.add(pairs)

            self._guard("activations", reduce)

        return hook

    def _on_loss(self, module: Any, args: Any, output: Any) -> None:
        """The loss (``losses/loss``) and its target (``labels/loss``): every step by default,
        so one plain function with the fewest torch calls (each costs 5-10 µs on the caches a
        forward leaves cold), not a guarded closure per collection."""
        if not self.run.enabled:
            return
        step = self.current_key()[1]
        try:
            if self._saves("losses", step) and self._wanted("losses/loss"):
                outs = _tensors_of(self.torch, output)
                if outs:
                    t = outs[0]
                    if t.numel() != 1:
                        self.add([("losses/loss", t)])
                    elif self._defers(t):  # from a GPU: one copy into the ring, never waited for
                        self.add_scalar("losses/loss", self._ring_put(t) or t.detach().reshape(()))
                    else:  # on the CPU read now (one call, no copy); elsewhere copied at the flush
                        self.add_scalar("losses/loss", t.item() if t.is_cpu else t.detach().reshape(()))
        except Exception as exc:  # never into the training loop
            self._hook_failed("losses", exc)
        try:
            target = args[1] if len(args) > 1 else None
            if (
                isinstance(target, self.torch.Tensor)
                and self._saves("labels", step)
                and self._wanted("labels/loss")
            ):
                self._add_labels("labels/loss", target, _classes_of(args[0], target))
        except Exception as exc:
            self._hook_failed("labels", exc)

    # -- rows ----------------------------------------------------------------------------------
    def add(self, tensors: Iterable[tuple[str, Any]], *, negated: bool = False) -> None:
        """Reduce ``(name, tensor)`` pairs of the current step (grouped by device) into rows;
        ``negated``: the tensors hold the values' negatives (the rows are flipped at the flush)."""
        by_device: dict[Any, list[tuple[str, Any]]] = {}
        for name, t in tensors:
            if self._wanted(name) and t.is_floating_point():
                by_device.setdefault(t.device, []).append((name, t))
        if not by_device:
            return
        mode, step = self.current_key()
        for group in by_device.values():
            parts = partial(self.torch, [t for _, t in group])
            with self._lock:
                names, shapes = [n for n, _ in group], [list(t.shape) for _, t in group]
                self._rows.append((names, shapes, (group[0][1].device, parts), negated))
            if self.full is not None:
                for name, t in group:
                    if self.full.wants(name, step):
                        self._save_full(mode, step, name, -t if negated else t)

    def _add_labels(self, name: str, target: Any, classes: int | None = None) -> None:
        """Class indices: each class's count (``ignore_index``'s negative values left out), one
        ``bincount`` kept on the device until the flush, whose row is computed from the counts
        on the host (``_reduce.counts_row``), or a small batch on the CPU read as a list and
        counted when the record is built. Float targets: their reductions. ``classes``: the
        number of classes where the loss's input tells it (``(N, C, ...)`` logits); on a GPU the
        counts are then a scatter into ``classes`` bins, since ``bincount`` reads the labels'
        maximum back to size its output (a synchronisation every step)."""
        torch = self.torch
        if target.dtype not in self._class_dtypes:  # float (soft labels), complex, bool
            self.add([(name, target.detach().to(torch.float32))])
            return
        shape = target.shape
        if len(shape) == 1 and shape[0] <= HOST_LABELS:
            # A batch of class indices on the host: one read, counted off the training thread
            # (``_watch_record``), where a bincount and its read back are two kernels a step;
            # from a GPU, one copy into the ring, read once shipped and counted the same way.
            listed: RingRef | list[int] | None = None
            if self._defers(target):
                listed = self._ring_put(target)
            elif target.is_cpu:
                listed = target.tolist()
            if listed is not None:
                with self._lock:
                    self._labels[name] = listed
                    self._label_shapes[name] = list(shape)
                return
        flat = target.reshape(-1)
        if classes is not None and not target.is_cpu:
            counts = _scatter_counts(torch, flat, classes)
            with self._lock:
                self._classes[name] = counts
                self._label_shapes[name] = list(shape)
            return
        try:  # one kernel for the usual labels; bincount refuses negative ones (ignore_index)
            counts = torch.bincount(flat)
        except RuntimeError:
            counts = torch.bincount(flat[flat >= 0]) if flat.numel() else flat.new_zeros(0)
        with self._lock:
            self._classes[name] = counts
            self._label_shapes[name] = list(shape)

    def _defers(self, t: Any) -> bool:
        return not self.tensorboard and _watch_host.deferred(t)

    def _ring_put(self, t: Any) -> RingRef | None:
        """``t``'s values into its device's ring (None: the ring is full; the caller keeps ``t``)."""
        with self._lock:
            ring = self._rings.get(t.device)
            if ring is None:
                ring = self._rings[t.device] = Ring(self.torch, t.device)
            return ring.put(t)

    def add_scalar(self, name: str, value: Any) -> None:
        with self._lock:
            self._scalars.append((name, value))

    def _save_full(self, mode: str, step: int, name: str, t: Any) -> None:
        assert self.full is not None
        size = t.numel() * t.element_size()
        if self._full_bytes + size > self.full.max_bytes_per_step:
            log_once(
                "full-tensors-budget",
                logging.WARNING,
                "profilerhub: watch: full tensors past %d bytes in one step are skipped (max_bytes_per_step)",
                self.full.max_bytes_per_step,
            )
            return
        self._full_bytes += size
        from ._npy import npy_bytes

        rank = self.run.rank()
        seq = self.run.next_full_tensor()
        path = f"tensors/full/rank{rank}/{seq:08d}.npy"
        self.run.uploader.submit(path, npy_bytes(t.detach().to("cpu")))
        full = {"kind": "full", "name": name, "mode": mode, "step": step, "rank": rank, "path": path}
        self.run.tensors.append(
            {**full, "shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
        )

    def flush(self, *, final: bool = False) -> None:
        """The pending rows, copied to the host (once per device), as one record of the run;
        ``final`` (the run's end, ``remove``): what waits for a shipment is shipped now."""
        with self._lock:
            rows, scalars, dead, key = self._rows, self._scalars, self._dead, self._key
            classes, labels = self._classes, self._labels
            self._rows, self._scalars, self._dead, self._classes, self._labels = [], [], [], {}, {}
        try:
            if rows or scalars or classes or labels:
                key = key or self.current_key()
                if rows or dead or classes or self.tensorboard or not self._light(key, scalars, labels):
                    self._emit(rows, scalars, dead, key, classes, labels)
            if self._held and (final or self._ship_due()):
                self._ship()
            if self._unchecked:
                self._check_landed()
        except Exception as exc:  # never into the training loop
            self._hook_failed("flush", exc)

    def _ship_due(self) -> bool:
        if time.monotonic() - self._shipped_at >= _watch_host.SHIP_S:
            return True
        return any(2 * r.used > r.buf.numel() for r in self._rings.values())

    def _ship(self) -> None:
        """The rings to the host (one copy each, not waited for) and the steps held for them to
        the run's buffer, in their order; fresh rings for the next steps."""
        with self._lock:
            rings, self._rings = self._rings, {}
            held, self._held = self._held, []
        copy = HostCopy(self.torch, defer=True)
        for ring in rings.values():
            ring.host, ring.copy = copy(ring.buf[: ring.used]), copy
        copy.record()
        self._shipped_at = time.monotonic()
        if held:
            self.run.tensors.extend(held)
            self._unchecked.append(held)

    def _check_landed(self) -> None:
        """Shipments from a GPU that have landed, and the one before the last waited for (the
        CPU runs at most one shipment ahead of the GPU's copies): a step with a NaN or an Inf goes
        to the SDK-side ExplodingTensor, so an opted-in run stops about ``SHIP_S`` after it."""
        waiting = self._unchecked
        while waiting and (len(waiting) > 1 or all(v.landed() for v in waiting[0])):
            for values in waiting.pop(0):
                if values.nonfinite():
                    self.run.on_tensor_record(values())

    def _light(self, key: tuple[str, int], scalars: list[tuple[str, Any]], labels: dict[str, Any]) -> bool:
        """An unsaved step's flush (host floats and host labels only, all finite: 99 steps in 100
        at the defaults) as a ``StepValues`` with no torch call at all; False: not such a step."""
        if not all(type(v) is float and v - v == 0.0 for _, v in scalars):  # a tensor, NaN or Inf
            return False
        if not all(type(v) is list for v in labels.values()):  # in a ring
            return False
        run = self.run
        mode, step = key
        global_step = run.current_step if run.current_step is not None else run.mode_steps.get("train", step)
        if self._rank is None:
            self._rank = run.rank()
        values = StepValues(mode, step, global_step, self._rank, now_ns(), scalars=scalars, types=self._types)
        if labels:
            values.label_values = labels
            values.label_shapes = {n: self._label_shapes[n] for n in labels if n in self._label_shapes}
        run.tensors.append(values)
        return True

    def _emit(
        self,
        rows: list[tuple[list[str], list[list[int]], Any, bool]],
        scalars: list[tuple[str, Any]],
        dead: list[tuple[str, Any]],
        key: tuple[str, int],
        classes: dict[str, Any],
        labels: dict[str, Any],
    ) -> None:
        """The step's values to the host, as a ``StepValues`` the collector turns into the record
        (at once when one is NaN or Inf: the SDK-side ExplodingTensor reads it, or for TensorBoard)."""
        torch, run = self.torch, self.run
        mode, step = key
        global_step = run.current_step if run.current_step is not None else run.mode_steps.get("train", step)
        if self._rank is None or rows:  # a rank lookup costs a loss-only step more than the rest
            self._rank = run.rank()
        values = StepValues(mode, step, global_step, self._rank, now_ns(), types=self._types)
        copy = HostCopy(torch, defer=not self.tensorboard)
        by_device: dict[Any, list[int]] = {}
        for i, (_, _, (device, _), _) in enumerate(rows):
            by_device.setdefault(device, []).append(i)
        folded = []
        for idx in by_device.values():  # one fold and one copy to the host per device
            host = copy(fold(torch, [p for i in idx for p in rows[i][2][1]]).to(torch.float64))
            negated = [rows[i][3] for i in idx for _ in rows[i][0]]
            names = [(n, s) for i in idx for n, s in zip(rows[i][0], rows[i][1], strict=True)]
            folded.append((names, [j for j, neg in enumerate(negated) if neg], host))
        dead_host = copy.scalars([v for _, v in dead])
        scalar_host = copy.scalars([v for _, v in scalars if not isinstance(v, int | float | RingRef)])
        class_host = copy.vectors(classes)
        refs: list[RingRef] = [v for _, v in scalars if isinstance(v, RingRef)]
        refs += [v for v in labels.values() if isinstance(v, RingRef)]
        waits: list[Any] = [copy, *{id(r.ring): r.ring for r in refs}.values()]

        def settle() -> None:  # the host tensors to the record's values, once the copies landed
            for w in waits:
                w.wait()
            for names, flip, host in folded:
                if flip:  # rows of negated values: min and max swap and change sign, as the mean does
                    at = torch.tensor(flip)
                    lo, hi, mean = -host[at, 1], -host[at, 0], -host[at, 2]
                    host[at, 0], host[at, 1], host[at, 2] = lo, hi, mean
                values.rows.append((names, host[:, :10], host[:, 10 : 10 + N_BINS].to(torch.int64)))
            values.dead = {n: float(v) for (n, _), v in zip(dead, dead_host, strict=True)}
            read = iter(scalar_host)
            values.scalars = [(n, _host_value(v, read)) for n, v in scalars]
            for name, ref in labels.items():
                if isinstance(ref, RingRef):
                    values.label_values[name] = ref.ints()
            for name, counts in class_host.items():  # bincount's length: up to the largest class seen
                listed = counts.tolist()
                while listed and not listed[-1]:
                    listed.pop()
                values.classes[name] = listed

        values.label_values = {n: v for n, v in labels.items() if not isinstance(v, RingRef)}
        shapes = self._label_shapes
        values.label_shapes = {n: shapes[n] for n in (*classes, *labels) if n in shapes}
        if copy.pending or refs:  # from a GPU: read off the training thread, NaN/Inf checked later
            copy.record()
            values.pending, values.copy = settle, _Landed(waits)
            self._held.append(values)
            return
        settle()
        if not (self.tensorboard or values.nonfinite()):
            run.tensors.append(values)
            return
        record = values()
        run.tensors.append(record)
        run.on_tensor_record(record)
        if self.tensorboard:
            _to_tensorboard(run, record)
