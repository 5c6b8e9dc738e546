"""Annotations mirrored into PyTorch: ``record_function`` ranges and NVTX ranges.

Nothing here imports torch: the hooks are used only once the training script has imported it.
The profiler itself lives in :mod:`profilerhub._torchprof`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from ._log import log_once


class TorchHooks:
    """Mirror SDK ranges into torch: ``record_function`` while a profiler records, NVTX on CUDA.

    ``record_function`` costs ~10 µs even with no profiler running, so it is used only while
    ``torch.autograd._profiler_enabled()`` (0.1 µs) says a profiler is recording.
    """

    __slots__ = ("_enabled", "_record_function", "_nvtx_push", "_nvtx_pop")

    def __init__(self, torch: Any) -> None:
        self._enabled: Callable[[], bool] = torch.autograd._profiler_enabled
        self._record_function = torch.autograd.profiler.record_function
        self._nvtx_push: Callable[[str], Any] | None = None
        self._nvtx_pop: Callable[[], Any] | None = None
        try:
            if torch.cuda.is_available():
                self._nvtx_push = torch.cuda.nvtx.range_push
                self._nvtx_pop = torch.cuda.nvtx.range_pop
        except Exception as exc:
            log_once("nvtx", logging.INFO, "profilerhub: no NVTX ranges (%s)", exc)

    def enter(self, name: str) -> Any:
        """Open the torch-side range(s) for ``name``; returns what :meth:`exit` needs."""
        rf = None
        if self._enabled():
            rf = self._record_function(name)
            rf.__enter__()
        if self._nvtx_push is not None:
            self._nvtx_push(name)
        return rf

    def exit(self, token: Any) -> None:
        if self._nvtx_pop is not None:
            self._nvtx_pop()
        if token is not None:
            token.__exit__(None, None, None)

    def push_nvtx(self, name: str) -> bool:
        """Open an NVTX range only (steps: the profiler marks them itself as ``ProfilerStep#N``)."""
        if self._nvtx_push is None:
            return False
        self._nvtx_push(name)
        return True

    def pop_nvtx(self) -> None:
        if self._nvtx_pop is not None:
            self._nvtx_pop()


_hooks: TorchHooks | None = None
_hooks_checked = False


def torch_hooks() -> TorchHooks | None:
    """The hooks once the script has imported torch; None before that (checked cheaply each time)."""
    global _hooks, _hooks_checked
    if _hooks_checked:
        return _hooks
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "autograd"):
        return None  # not imported (or still importing): look again next time
    _hooks_checked = True
    try:
        _hooks = TorchHooks(torch)
    except Exception as exc:
        log_once("torch-hooks", logging.WARNING, "profilerhub: annotations not mirrored into torch (%s)", exc)
    return _hooks


def reset_torch_hooks() -> None:
    global _hooks, _hooks_checked
    _hooks, _hooks_checked = None, False
