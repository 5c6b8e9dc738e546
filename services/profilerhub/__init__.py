"""ProfilerHub's training-side SDK.

    import profilerhub as ph
    ph.init(job="resnet50-bs64")              # hub from PROFILERHUB_URL / PROFILERHUB_TOKEN
    for i, batch in enumerate(loader):
        with ph.step(i):
            with ph.annotate("forward"):
                loss = model(batch)
        ph.log_metric("train:loss", loss.item(), step=i)
    ph.finish()                               # also runs at exit

``import profilerhub`` stays cheap: standard library only (no torch, no httpx, no boto3, no server
dependency); each of those is imported when a run needs it.  See ``docs/sdk.md``.
"""

from __future__ import annotations

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (tool.hatch.version)

from typing import TYPE_CHECKING, Any  # noqa: E402

if TYPE_CHECKING:
    from ._api import StopTraining, annotate, current_run, finish, init, log_metric, mode, step, watch
    from ._watch import SaveConfig

_API = frozenset(
    {"StopTraining", "annotate", "current_run", "finish", "init", "log_metric", "mode", "step", "watch"}
)


def __getattr__(name: str) -> Any:
    # The run API is imported on first use, so the ``profilerhub`` command (a sub-package) does not
    # pay for it (logging, threads, fork hooks) when it only analyses a trace.
    if name in _API:
        from . import _api

        value = getattr(_api, name)
        globals()[name] = value
        return value
    if name == "SaveConfig":
        from ._watch import SaveConfig

        globals()[name] = SaveConfig
        return SaveConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _API | {"SaveConfig"})


__all__ = [
    "SaveConfig",
    "StopTraining",
    "__version__",
    "annotate",
    "current_run",
    "finish",
    "init",
    "log_metric",
    "mode",
    "step",
    "watch",
]
