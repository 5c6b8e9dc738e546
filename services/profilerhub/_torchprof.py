"""The PyTorch profiler, run on a schedule counted in ``ph.step`` calls (imported only when asked)."""

from __future__ import annotations

import contextlib
import gzip
import logging
import os
import socket
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

from ._config import TorchProfilerConfig
from ._log import log_once, logger


class TorchProfiler:
    """Runs ``torch.profiler.profile`` on a schedule; each finished trace is gzipped and handed on.

    ``emit(path, data)`` receives ``torch/<host>_<pid><label>.<n>.pt.trace.json.gz`` (the naming of
    ``torch.profiler.tensorboard_trace_handler``; ``label`` tells a capture's traces apart) and the
    gzipped Chrome-trace bytes.
    """

    def __init__(self, cfg: TorchProfilerConfig, emit: Callable[[str, bytes], None], label: str = "") -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule

        self._emit = emit
        self._cfg = cfg
        self._count = 0
        self.steps = 0
        self._worker = f"{socket.gethostname()}_{os.getpid()}{label}"
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self.activities = [a.name for a in activities]
        with warnings.catch_warnings():  # a capture's schedule has no warmup: torch warns about it
            warnings.filterwarnings("ignore", message=".*warmup.*")
            self._prof = profile(
                activities=activities,
                schedule=schedule(
                    wait=cfg.wait,
                    warmup=cfg.warmup,
                    active=cfg.active,
                    repeat=cfg.repeat,
                    skip_first=cfg.skip_first,
                ),
                on_trace_ready=self._on_trace_ready,
                **dict(cfg.flags),  # type: ignore[arg-type]
            )
        self._running = False
        self._repeats = cfg.repeat != 1

    def start(self) -> None:
        self._prof.start()
        self._running = True

    def step(self) -> None:
        if not self._running:
            return
        self.steps += 1
        if not self._repeats:
            self._prof.step()
            return
        # Each new cycle warns that the previous cycle's events are cleared: expected here (each
        # cycle's trace is exported on its own), and fatal in a process that turns warnings into
        # errors (the exception leaves Kineto half-started: torch 2.13 then segfaults at stop).
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Warning: Profiler clears events")
            self._prof.step()

    def stop(self) -> None:
        if self._running:
            self._running = False
            self._prof.stop()

    def never_active(self) -> str:
        """Once stopped: why no trace was recorded, when none was ("" when one was)."""
        if self._count:
            return ""
        c = self._cfg
        needed = c.skip_first + c.wait + c.warmup + 1
        return (
            f"the torch_profiler schedule never became active: the run had {self.steps} ph.step() "
            f"call(s), and recording starts after skip_first + wait + warmup = {needed - 1} "
            f"(skip_first={c.skip_first}, wait={c.wait}, warmup={c.warmup}, active={c.active}); "
            "no PyTorch trace was recorded. Lower wait/warmup, or call ph.step() once per training step"
        )

    def _on_trace_ready(self, prof: Any) -> None:
        # Runs in the training thread at a step boundary; exporting takes as long as it takes.
        self._count += 1
        name = f"torch/{self._worker}.{self._count}.pt.trace.json.gz"
        fd, tmp = tempfile.mkstemp(prefix="profilerhub-", suffix=".pt.trace.json")
        os.close(fd)
        try:
            prof.export_chrome_trace(tmp)
            with open(tmp, "rb") as fh:
                data = gzip.compress(fh.read(), compresslevel=6)
            self._emit(name, data)
        except Exception as exc:
            log_once(
                "torch-export", logging.WARNING, "profilerhub: could not export the torch trace (%s)", exc
            )
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        logger.debug("profilerhub: torch trace %s ready", name)
