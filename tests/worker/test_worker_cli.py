"""`profilerhub worker`, `beat` and `app` refuse to run half-configured, saying what to set."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.hub import cli_command


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
    env["PROFILERHUB_HOME"] = str(tmp_path)
    return subprocess.run([*cli_command(), *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("command", ["worker", "beat"])
def test_worker_and_beat_without_redis_url_say_what_to_set(tmp_path: Path, command: str) -> None:
    done = run(tmp_path, command)
    assert done.returncode == 2
    assert "PROFILERHUB_REDIS_URL is not set" in done.stderr and "Traceback" not in done.stderr


def test_app_without_its_environment_names_the_missing_variables(tmp_path: Path) -> None:
    done = run(tmp_path, "app")
    assert done.returncode == 2
    assert "PROFILERHUB_APP_ID" in done.stderr and "Traceback" not in done.stderr
