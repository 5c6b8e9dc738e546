"""The public functions: ``init``, ``step``, ``annotate``, ``log_metric``, ``finish``; and
``StopTraining``, the one exception the SDK raises into a training loop that asked for it.

One run per process is current at a time.  When there is none (before ``init``, after
``finish``, in a forked child), ``step``/``annotate``/``log_metric`` do nothing, so instrumented
code runs unchanged without the SDK configured.  None of them raises into the training loop;
``init`` raises ``ValueError`` for invalid arguments only.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ._clock import now_ns
from ._log import log_once, logger, reset_log_once
from ._torch import torch_hooks
from .sinks.base import USER_STOP

if TYPE_CHECKING:
    from ._run import Run
    from .sinks import Sink

F = TypeVar("F", bound=Callable[..., Any])

_current: Run | None = None
_init_lock = threading.Lock()
_tls = threading.local()


class StopTraining(Exception):  # noqa: N818 - SageMaker's name for it
    """Raised by ``ph.step`` when the hub asks the run to stop: a person stopped the job
    (``StopTrainingJob``, ``POST …/jobs/{id}/stop``, the console's Stop: every run gets it), or a
    rule named in ``ph.init(stop_on=[...])`` found issues (only runs that opted in). Raised once;
    ``rule`` names the rule, or is ``"StopTrainingJob"`` for a person's stop. Catch it around the
    loop and finish as usual."""

    def __init__(self, rule: str, job: str) -> None:
        if rule == USER_STOP:
            message = f"job {job}: a stop was requested on the hub (StopTrainingJob)"
        else:
            message = f"job {job}: rule {rule} found issues and the run opted to stop on it"
        super().__init__(message)
        self.rule = rule
        self.job = job


def current_run() -> Run | None:
    """The run ``init`` started in this process, if it is still recording."""
    return _current


def init(
    job: str | None = None,
    *,
    output: str | os.PathLike[str] | None = None,
    torch_profiler: Mapping[str, Any] | bool | str | None = None,
    sample_interval_s: float = 0.1,
    chunk_interval_s: float = 5.0,
    metric_definitions: Sequence[Mapping[str, str]] | None = None,
    rules: Sequence[str | Mapping[str, Any]] | None = None,
    stop_on: Sequence[str] | None = None,
    capture_output: bool = True,
    hub_url: str | None = None,
    token: str | None = None,
    flush_timeout_s: float = 10.0,
    max_pending_bytes: int = 256 << 20,
    spill_dir: str | os.PathLike[str] | None = None,
    spill_max_bytes: int | None = None,
    tensorboard_dir: str | os.PathLike[str] | None = None,
    _sink: Sink | None = None,
) -> Run:
    """Start profiling this process as the job ``job``.

    ``output``: ``None`` uploads to the hub at ``$PROFILERHUB_URL`` with ``$PROFILERHUB_TOKEN``
    (without a hub URL it writes to ``./profilerhub-traces``); a directory writes there
    (``<output>/<job>/``); ``s3://bucket/prefix`` writes objects under ``prefix/<job>/``.
    ``torch_profiler``: ``{"wait", "warmup", "active", "repeat", "skip_first"}`` (a
    ``torch.profiler.schedule`` counted in ``ph.step`` calls) plus ``record_shapes``,
    ``profile_memory``, ``with_stack``, ``with_flops``, ``with_modules``; ``True`` for
    ``{"wait": 1, "warmup": 1, "active": 3}``; ``"full"`` (or ``{"preset": "full", ...}``) for
    that schedule with shapes, memory, stacks and modules, what the operator, kernel and memory
    views read.  ``sample_interval_s``: system-metrics period
    (0.1-60 s).  ``chunk_interval_s``: how often buffered records are written out.
    ``metric_definitions``: SageMaker-style ``[{"Name", "Regex"}]`` (at most 40) matched against
    lines the script prints.  ``rules``: profiler rules the hub runs on the job (names or
    ``{"rule", "parameters"}``, at most 20; docs/rules.md).  ``stop_on``: rule names; when one
    finds issues while the job runs, the hub asks the run to stop and the next ``ph.step`` raises
    ``ph.StopTraining`` (hub runs only; learnt from the uploads' answers, no extra request).
    ``flush_timeout_s``: how long
    ``finish`` (and exit) may wait for uploads.  ``spill_dir`` / ``spill_max_bytes`` (default
    ``$PROFILERHUB_SPILL_DIR`` or ``~/.cache/profilerhub/spill``, and ``$PROFILERHUB_SPILL_MAX_BYTES``
    or 2 GiB; 0 = off): where files the hub or S3 did not take are kept for a later delivery.  A
    hub run also delivers, in the background, what earlier runs spilled for the same hub.  A run
    already started is finished first.
    ``tensorboard_dir``: a local folder the script's own TensorBoard writer fills
    (``SummaryWriter(log_dir=...)``); the run copies it into the job (``raw/tensorboard/logdir/``)
    every 30 s and at ``finish``, so it shows in the owner's TensorBoard app (docs/sdk.md).
    """
    global _current
    from ._config import build_config
    from ._run import Run

    cfg = build_config(
        job=job,
        output=output,
        torch_profiler=torch_profiler,
        sample_interval_s=sample_interval_s,
        chunk_interval_s=chunk_interval_s,
        metric_definitions=metric_definitions,
        rules=rules,
        stop_on=stop_on,
        capture_output=capture_output,
        hub_url=hub_url,
        token=token,
        flush_timeout_s=flush_timeout_s,
        max_pending_bytes=max_pending_bytes,
        spill_dir=spill_dir,
        spill_max_bytes=spill_max_bytes,
        tensorboard_dir=tensorboard_dir,
    )
    with _init_lock:
        if _current is not None:
            logger.warning(
                "profilerhub: init() while job %s is running; finishing it first", _current.cfg.job
            )
            _current.finish()
        reset_log_once()
        if output is None and cfg.sink == "local":
            logger.warning(
                "profilerhub: PROFILERHUB_URL is not set; writing job %s to %s (upload it later with "
                "`profilerhub upload`)",
                cfg.job,
                cfg.location,
            )
        run = Run(cfg, sink=_sink)
        run.start()
        _current = run
        # Registered here, after the script's imports (torch), so it runs before their exit hooks.
        atexit.unregister(_finish_at_exit)
        atexit.register(_finish_at_exit)
    return run


def finish(timeout: float | None = None) -> dict[str, Any]:
    """Stop the current run and flush its files (at most ``timeout`` seconds, default the run's
    ``flush_timeout_s``).  Returns a summary with where the files went and what was dropped."""
    global _current
    run = _current
    if run is None:
        return {}
    summary = run.finish(timeout)
    if _current is run:
        _current = None
    return summary


def log_metric(name: str, value: float, step: int | None = None, *, tensorboard: bool = False) -> None:
    """Record a training metric (``step`` defaults to the current ``ph.step``).

    ``tensorboard=True`` also writes it as a TensorBoard scalar (tag ``name``) into the job's
    ``raw/tensorboard/`` event files, which the owner's TensorBoard app shows (docs/sdk.md)."""
    run = _current
    if run is not None and run.enabled:
        try:
            run.log_metric(name, value, step, tensorboard=tensorboard)
        except Exception as exc:
            log_once("log_metric", logging.WARNING, "profilerhub: log_metric failed (%s)", exc)


def watch(
    model: Any,
    optimizer: Any = None,
    loss_fn: Any = None,
    *,
    collections: Sequence[str] | Mapping[str, Any] | None = None,
    every: Any = None,
    include: str | Sequence[str] | None = None,
    exclude: str | Sequence[str] | None = None,
    full_tensors: Any = None,
    tensorboard: bool = False,
) -> Any:
    """Collect reductions of ``model``'s weights, biases, gradients, activations, losses and
    optimizer updates at saved steps (docs/debugging.md). Returns a handle with ``remove()``.

    ``collections``: names (smdebug's: ``weights``, ``biases``, ``gradients``, ``activations``,
    ``losses``, ``optimizer_variables``) or ``{name: save config}``; default weights, biases,
    gradients, losses (and optimizer_variables with an ``optimizer``). ``every``: the save config
    of collections without their own (an interval, ``SaveConfig`` or its fields as a dict; default
    every 100 steps, losses every step). ``include``/``exclude``: regexes on full names
    (``"activations/encoder.*relu"``) that add tensors to or remove them from what is saved.
    ``full_tensors``: regexes (or ``{"include", "steps", "max_bytes_per_step"}``) of tensors also
    saved whole. ``tensorboard``: also write the reductions as TensorBoard scalars and histograms.
    Without a current run it does nothing. ``ValueError`` for invalid arguments only."""
    from ._watch import FullTensors, Watcher, _patterns, save_configs

    configs = save_configs(collections, every, optimizer=optimizer is not None)
    inc, exc = _patterns(include, "include"), _patterns(exclude, "exclude")
    full = FullTensors.of(full_tensors)
    run = _live_run()
    if run is None:
        logger.info("profilerhub: watch() without a running ph.init(): nothing is collected")
        return _NoWatch()
    import torch

    watcher = Watcher(
        run,
        torch,
        model,
        optimizer=optimizer,
        loss_fn=loss_fn,
        configs=configs,
        include=inc,
        exclude=exc,
        full=full,
        tensorboard=tensorboard,
    )
    run.watchers.append(watcher)
    return watcher


class _NoWatch:
    def remove(self) -> None:
        pass


class mode:  # noqa: N801 - used like a function: ph.mode("eval")
    """Set the mode (``"train"``, ``"eval"``, ``"predict"``) that watched tensors are recorded
    under, each with its own step counter (smdebug's modes). A call sets it; as a context manager
    it also restores the previous mode on exit."""

    __slots__ = ("name", "_previous")

    def __init__(self, name: str) -> None:
        from ._watch import MODES

        if name not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {name!r}")
        self.name = name
        self._previous = _set_mode(name)

    def __enter__(self) -> mode:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            _set_mode(self._previous)


def _set_mode(name: str) -> str | None:
    run = _live_run()
    if run is None:
        return None
    previous = run.mode
    if previous != name:
        try:
            run.flush_watchers()
        except Exception as exc:
            log_once("watch-mode", logging.WARNING, "profilerhub: watch: flush failed (%s)", exc)
        run.mode = name
        if name == "train" and run.current_step is not None:
            for w in run.watchers:
                w.start_step("train", run.current_step)
    return previous


class annotate:  # noqa: N801 - used like a function: ph.annotate("forward")
    """A named range of code, as a context manager or a decorator; nestable, thread-safe.

    Recorded with the SDK clock, the thread and the nesting depth; mirrored into a running
    torch profiler (``record_function``) and as an NVTX range on CUDA.
    """

    __slots__ = ("name", "_start", "_depth", "_token", "_run")

    def __init__(self, name: str) -> None:
        self.name = str(name)
        self._run: Run | None = None

    def __enter__(self) -> annotate:
        run = self._run = _live_run()
        if run is None:
            return self
        self._depth = _enter_depth(run)
        hooks = torch_hooks()
        try:
            self._token = hooks.enter(self.name) if hooks is not None else None
        except Exception as exc:
            self._token = None
            log_once("torch-enter", logging.WARNING, "profilerhub: torch range failed (%s)", exc)
        self._start = now_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        run = self._run
        if run is None:
            return
        end = now_ns()
        hooks = torch_hooks()
        if hooks is not None:
            try:
                hooks.exit(self._token)
            except Exception as exc_:
                log_once("torch-exit", logging.WARNING, "profilerhub: torch range failed (%s)", exc_)
        _record(run, "annotation", self.name, self._start, end, self._depth, run.current_step)

    def __call__(self, func: F) -> F:
        import inspect  # here, not at the top: it costs ~15 ms of import time

        name = self.name
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with annotate(name):
                    return await func(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with annotate(name):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class step:  # noqa: N801 - used like a function: with ph.step(i)
    """One training step: ``with ph.step(i): ...`` (``i`` defaults to the previous step + 1).

    Sets the step number that annotations and metrics get, records the step's range, and advances
    the torch profiler's schedule when the step ends. Entering it raises ``StopTraining`` when
    the hub asked the run to stop (a person's stop; a rule's, for runs with ``ph.init(stop_on=...)``).
    """

    __slots__ = ("number", "_start", "_depth", "_run", "_nvtx")

    def __init__(self, number: int | None = None) -> None:
        self.number = number
        self._run: Run | None = None

    def __enter__(self) -> step:
        run = self._run = _live_run()
        if run is None:
            return self
        stop = run.stop_requested()
        if stop is not None:
            self._run = None
            error = StopTraining(stop, run.cfg.job)
            logger.warning("profilerhub: %s; raising ph.StopTraining", error)
            raise error
        if self.number is None:
            self.number = 0 if run.current_step is None else run.current_step + 1
        run.current_step = self.number
        if run.sink.capture_request is not None:
            run.start_capture(self.number)
        if run.watchers and run.mode == "train":
            _watch_step(run, self.number)
        self._depth = _enter_depth(run)
        hooks = torch_hooks()
        self._nvtx = hooks is not None and hooks.push_nvtx(f"step_{self.number}")
        self._start = now_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        run = self._run
        if run is None:
            return
        _record(run, "step", f"step_{self.number}", self._start, now_ns(), self._depth, self.number)
        if run.watchers:
            _watch_step(run, None)
        if self._nvtx:
            hooks = torch_hooks()
            if hooks is not None:
                hooks.pop_nvtx()
        if run.capture is not None:
            run.step_capture()
        if run.torch_profiler is not None:
            try:
                run.torch_profiler.step()
            except Exception as exc_:
                log_once("torch-step", logging.WARNING, "profilerhub: torch profiler step failed (%s)", exc_)


def _watch_step(run: Run, number: int | None) -> None:
    """A step starts (``number``) or ends (None): the watchers send what the last one collected."""
    try:
        for w in run.watchers:
            if number is None:
                w.flush()
            else:
                w.start_step("train", number)
    except Exception as exc:
        log_once("watch-step", logging.WARNING, "profilerhub: watch: step rows lost (%s)", exc)


def _live_run() -> Run | None:
    run = _current
    return run if run is not None and run.enabled else None


def _record(run: Run, kind: str, name: str, start: int, end: int, depth: int, step: int | None) -> None:
    """Append a finished range and restore this thread's depth to what it was before it."""
    _tls.depth = depth
    run.annotations.append((kind, name, start, end, _tls.tid, depth, step))


def _enter_depth(run: Run) -> int:
    """This thread's nesting depth before entering; registers the thread's name once."""
    try:
        depth: int = _tls.depth
    except AttributeError:
        depth = 0
        _tls.tid = threading.get_native_id()
    if _tls.tid not in run.thread_names:
        run.thread_names[_tls.tid] = threading.current_thread().name
    _tls.depth = depth + 1
    return depth


def _finish_at_exit() -> None:
    run = _current
    if run is not None and run.pid == os.getpid():
        finish()


def _after_fork_in_child() -> None:
    global _current, _init_lock, _tls
    if _current is not None:
        _current.disable_in_forked_child()
    _current = None
    _init_lock = threading.Lock()
    _tls = threading.local()


os.register_at_fork(after_in_child=_after_fork_in_child)
