"""Lint and types are part of the product: `make test` fails when ruff or mypy would.

The same paths as the Makefile's `lint` target. mypy takes ~30 s on a cold cache here (2 shared cores)
and ~1 s warm; its cache lives in the repository's ignored `.mypy_cache`. It starts in the background
as soon as collection selects its test (tests/support/lint.py), so a cold run overlaps the suite.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.lint import mypy_result

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RUFF_PATHS = ["services", "workers", "tests", "benchmarks", "infra"]


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    executable = BIN / tool
    assert executable.exists(), f"{executable} is missing: run `make install`"
    return subprocess.run([str(executable), *args], cwd=ROOT, capture_output=True, text=True, timeout=240)


def test_ruff_finds_nothing() -> None:
    done = _run("ruff", "check", "--no-cache", *RUFF_PATHS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing() -> None:
    done = mypy_result()
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_is_strict_for_the_sdk_and_core() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    overrides = config.get("overrides", [])
    strict = [o for o in overrides if o.get("disallow_untyped_defs") and o.get("warn_return_any")]
    modules = {m for o in strict for m in o["module"]}
    assert {"profilerhub.*", "profilerhub_core.*"} <= modules
    assert (ROOT / "services" / "profilerhub" / "py.typed").exists()
