"""The benchmarks' anchors, installed once: one virtual environment per anchor (JupyterHub, the
TensorBoard profiler plugin) under ``$PROFILERHUB_BENCH_CACHE`` (default
``~/.cache/profilerhub-bench``), from the package registry, the first time a benchmark needs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CACHE = Path(os.environ.get("PROFILERHUB_BENCH_CACHE", Path.home() / ".cache" / "profilerhub-bench"))


class Unavailable(RuntimeError):
    """An anchor could not be installed or started here: the message says why and what to do."""


def venv(name: str, requirements: list[str], probe: str) -> Path:
    """The ``bin`` folder of the virtual environment ``name`` with ``requirements``, made if it is
    missing (``probe``: an executable of it that exists once the install has worked)."""
    root = CACHE / name
    if not (root / "bin" / probe).exists():
        print(f"installing {' '.join(requirements)} into {root} (once) ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
        pip = [str(root / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        done = subprocess.run([*pip, *requirements], capture_output=True, text=True)
        if done.returncode or not (root / "bin" / probe).exists():
            shutil.rmtree(root, ignore_errors=True)
            raise Unavailable(f"pip could not install {' '.join(requirements)}: {done.stderr.strip()[-300:]}")
    return root / "bin"


__all__ = ["CACHE", "Unavailable", "venv"]
