"""`profilerhub worker`, `beat` and `app` refuse to run half-configured, saying what to set."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.hub import cli_command


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")} | (env or {})
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


def test_worker_with_an_unknown_queue_kind_names_the_kinds_it_takes(tmp_path: Path) -> None:
    # the Redis is never reached: the option is checked before anything connects
    done = run(
        tmp_path, "worker", "--queues", "apps,ingets", env={"PROFILERHUB_REDIS_URL": "redis://127.0.0.1:1/0"}
    )
    assert done.returncode == 2, done.stderr
    assert "--queues" in done.stderr and "apps, ingest" in done.stderr and "Traceback" not in done.stderr
