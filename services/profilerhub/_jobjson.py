"""``job.json``: the run's description, written when it starts and again when it ends.

What ingest and ``profilerhub upload`` read of a run's raw files starts here; ``FORMAT`` names
their layout (``docs/sdk.md``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import sys
from typing import TYPE_CHECKING, Any

from . import __version__
from ._clock import clock_info

if TYPE_CHECKING:
    from ._run import Run

FORMAT = "profilerhub-raw/1"


def job_json(run: Run, *, status: str, end_ns: int | None = None) -> bytes:
    """``job.json``: what the run is (job, host, rank, versions, settings) and, at the end, what it
    delivered, dropped and spilled; ``status`` ``InProgress`` at the start, ``Completed`` at the end."""
    cfg = run.cfg
    tp = cfg.torch_profiler
    torch = sys.modules.get("torch")
    doc: dict[str, Any] = {
        "format": FORMAT,
        "job": cfg.job,
        "status": status,
        "host": socket.gethostname(),
        "pid": run.pid,
        "rank": int_env("RANK"),
        "world_size": int_env("WORLD_SIZE"),
        "run_id": run_id(),
        "sdk_version": __version__,
        "python": platform.python_version(),
        "torch_version": getattr(torch, "__version__", None),
        "argv": list(sys.argv),
        "start_ns": run.start_ns,
        "end_ns": end_ns,
        "clock": {
            **run.start_clock,
            "realtime_minus_monotonic_ns_at_end": clock_info()["realtime_minus_monotonic_ns"]
            if end_ns
            else None,
        },
        "sample_interval_s": cfg.sample_interval_s,
        "chunk_interval_s": cfg.chunk_interval_s,
        "metric_definitions": [d.as_dict() for d in cfg.metric_definitions],
        "rules": list(cfg.rules),
        "stop_on": list(cfg.stop_on),
        "torch_profiler": None
        if tp is None
        else {
            "wait": tp.wait,
            "warmup": tp.warmup,
            "active": tp.active,
            "repeat": tp.repeat,
            "skip_first": tp.skip_first,
            **tp.flags,
            "activities": getattr(run.torch_profiler, "activities", None),
        },
        "files": {
            **run.chunks,
            "torch": run.torch_traces,
            "tensorboard": run.tensorboard.event_files + run.tensorboard.synced_files,
        },
        "tensorboard_dir": None if cfg.tensorboard_dir is None else str(cfg.tensorboard_dir),
        "dropped": {
            "files": dict(run.uploader.dropped.files),
            "bytes": run.uploader.dropped.bytes,
            "invalid_metrics": run.invalid_metrics,
        },
        "spilled": {"files": dict(run.uploader.spilled.files), "bytes": run.uploader.spilled.bytes},
        "logs": dict(run.log_counts, max_bytes=run.max_log_bytes),
        "destination": run.sink.info(),
    }
    return json.dumps(doc, indent=1).encode()


#: What the launcher gives every rank of one distributed run alike (and another run, mostly, not).
RUN_ENV = ("TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "SLURM_STEP_ID", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE")


def run_id() -> str | None:
    """One distributed run's id, the same on each of its ranks: a digest of the launcher's
    environment (``RUN_ENV``: torchrun's run id, Slurm's job and step, the rendezvous address and
    port); None outside a distributed run (no ``WORLD_SIZE`` above 1). Ingest finds a rank job's
    other ranks by it (``profilerhub_worker.ingest.ranks``); two runs with the same launcher
    environment (a fixed port, no run id) get the same id and are told apart by time."""
    world = int_env("WORLD_SIZE")
    if world is None or world < 2:
        return None
    seen = "\n".join(f"{k}={os.environ.get(k, '')}" for k in RUN_ENV)
    return hashlib.sha256(seen.encode()).hexdigest()[:16]


def int_env(name: str) -> int | None:
    """An integer environment variable (``RANK``), None when unset or not a number."""
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None
