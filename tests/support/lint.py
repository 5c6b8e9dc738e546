"""mypy started beside the suite (registered for the whole suite by ``pytest_plugins`` in
``tests/conftest.py``).

A cold mypy run (no ``.mypy_cache``, as on a fresh clone) takes ~25 s of CPU here, ~50 s of wall on a
loaded 2-core machine, while the tests before ``tests/test_lint.py`` leave a core idle most of the
time. So when collection selects ``test_mypy_finds_nothing``, mypy starts at once in the background
and the test reads its verdict with ``mypy_result()``, waiting only for what is left of the run; a
session that never selects the test never starts it. Under pytest-xdist (``make test`` runs two
workers) the test starts mypy itself: both cores are busy with tests already.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MYPY = Path(sys.executable).parent / "mypy"
MYPY_PATHS = ["services", "workers"]  # the Makefile's `lint` target checks the same
MYPY_TEST = ("test_lint.py", "test_mypy_finds_nothing")

_running: list[subprocess.Popen[str]] = []


def _start() -> subprocess.Popen[str]:
    assert MYPY.exists(), f"{MYPY} is missing: run `make install`"
    return subprocess.Popen(
        [str(MYPY), *MYPY_PATHS], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def mypy_result(timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """mypy's verdict on ``MYPY_PATHS``: the run started beside the suite, or one started now."""
    process = _running.pop() if _running else _start()
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException:  # the timeout, or Ctrl-C while waiting: no mypy outlives the session
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    if hasattr(session.config, "workerinput"):
        # An xdist worker (`make test`): every worker collects every test, and no core is idle
        # beside two workers, so the test runs mypy itself on whichever worker it lands.
        return
    if any((item.path.name, item.name) == MYPY_TEST for item in session.items):
        _running.append(_start())


def pytest_sessionfinish(session: pytest.Session) -> None:
    while _running:  # the test was deselected at run time or the session stopped first (-x)
        process = _running.pop()
        process.kill()
        process.communicate()
