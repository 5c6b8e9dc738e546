"""``profilerhub up``, ``hub`` and ``db upgrade`` as real processes."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.support.hub import STACK_HUB_WORKERS, auth, cli_command, wait_for


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")} | env
    return subprocess.run([*cli_command(), *args], env=clean, capture_output=True, text=True, timeout=120)


def _live(pids: list[int]) -> list[int]:
    return [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]


def test_up_prints_the_admin_token_once_and_stops_all_children(hub_process: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = hub_process("up", home=home)
    token = first.admin_token()
    assert token.startswith("phk_")
    assert first.output().count(token) == 1
    assert stat.S_IMODE((home / "admin-token").stat().st_mode) == 0o600
    me = httpx.get(f"{first.url}/api/v1/me", headers=auth(token))
    assert me.status_code == 200 and me.json()["user"] == "admin"

    children = [p.pid for p in psutil.Process(first.process.pid).children(recursive=True)]
    assert children, "up runs the hub as a child process"
    assert first.stop(signal.SIGINT) == 0  # Ctrl-C
    assert _live(children) == []

    again = hub_process("up", home=home, env={"PROFILERHUB_HUB_WORKERS": "1"})  # first run: default count
    assert token not in again.output()
    assert "admin-token" in again.output()
    assert httpx.get(f"{again.url}/api/v1/me", headers=auth(token)).status_code == 200
    children = [p.pid for p in psutil.Process(again.process.pid).children(recursive=True)]
    assert again.stop(signal.SIGTERM) == 0
    assert _live(children) == []


def _children(up: Any, word: str) -> list[int]:
    return [p.pid for p in psutil.Process(up.process.pid).children() if word in " ".join(p.cmdline())]


def test_up_restarts_a_crashed_child_and_refuses_a_second_instance_on_its_home(
    hub_process: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    one_hub = {"PROFILERHUB_HUB_WORKERS": STACK_HUB_WORKERS}  # the default count: the test above
    first = hub_process("up", home=home, timeout=180, env=one_hub)  # a loaded machine starts slowly
    second = hub_process("up", home=home, wait=False, env=one_hub)
    assert second.process.wait(60) == 1
    said_second = " ".join(second.output().split())  # the console wraps long lines
    assert f"profilerhub up is already running on {home} (pid {first.process.pid})" in said_second
    assert "Traceback" not in second.output() and first.healthy()

    said = {
        "worker": "worker exited with code -9",
        "redis-server": "redis is not running; restarting it (restart 1)",
    }
    for word, message in said.items():
        (old,) = _children(first, word)
        psutil.Process(old).kill()
        wait_for(lambda m=message: m in " ".join(first.output().split()), f"up saying {message!r}")
        wait_for(lambda w=word, o=old: len(_children(first, w)) == 1 and o not in _children(first, w), word)
    assert "restarting it in 1s (restart 1)" in " ".join(first.output().split())
    wait_for(first.healthy, "the hub answering after the restarts")

    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    shared = [p for p in home.rglob("*") if p.is_file() and stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert shared == []
    assert first.stop(signal.SIGTERM) == 0


def test_hub_refuses_an_unmigrated_database_and_says_what_to_run(db_url: str, tmp_path: Path) -> None:
    done = run_cli(
        "hub", "--port", "1", env={"PROFILERHUB_HOME": str(tmp_path), "PROFILERHUB_DATABASE_URL": db_url}
    )
    assert done.returncode == 1
    assert "profilerhub db upgrade" in done.stderr
    assert "Traceback" not in done.stderr


def test_db_upgrade_then_hub_serves_with_the_configured_admin_token(
    db_url: str, tmp_path: Path, hub_process: Any
) -> None:
    env = {"PROFILERHUB_HOME": str(tmp_path), "PROFILERHUB_DATABASE_URL": db_url}
    upgraded = run_cli("db", "upgrade", env=env)
    assert upgraded.returncode == 0, upgraded.stderr
    assert "upgraded from empty" in upgraded.stdout
    assert "already at revision" in run_cli("db", "upgrade", env=env).stdout

    secret = "automation-token-0123456789abcdef"
    env = {"PROFILERHUB_ADMIN_TOKEN": secret, "PROFILERHUB_HUB_WORKERS": "1"}
    hub = hub_process("hub", home=tmp_path, database_url=db_url, env=env)
    assert httpx.get(f"{hub.url}/api/v1/me", headers=auth(secret)).json()["is_platform_admin"] is True
    assert secret not in hub.output()
    assert not (tmp_path / "admin-token").exists()


def test_invalid_settings_are_reported_without_a_traceback(tmp_path: Path) -> None:
    done = run_cli("hub", env={"PROFILERHUB_HOME": str(tmp_path), "PROFILERHUB_ENVIRONMENT": "production"})
    assert done.returncode == 2
    assert "PROFILERHUB_SECRET_KEY" in done.stderr and "Traceback" not in done.stderr


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


NEEDS_THE_DATABASE = [
    ("db", "upgrade"),
    ("db", "current"),
    ("up", "--port", "0"),
    ("hub", "--port", "0"),
    ("worker",),
]


@pytest.mark.parametrize("command", NEEDS_THE_DATABASE)
def test_a_database_that_does_not_answer_is_one_line_and_exit_1(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    url = f"postgresql+psycopg://ph:s3cret@127.0.0.1:{_closed_port()}/ph"
    env = {"PROFILERHUB_HOME": str(tmp_path), "PROFILERHUB_DATABASE_URL": url}
    done = run_cli(*command, env=env | {"PROFILERHUB_REDIS_URL": "redis://127.0.0.1:1/0"})
    said = " ".join(done.stderr.split())
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "s3cret" not in done.stderr
    assert "cannot use postgresql+psycopg://ph:***@127.0.0.1" in said and "PROFILERHUB_DATABASE_URL" in said


def test_a_database_url_nobody_can_use_is_a_usage_error(tmp_path: Path) -> None:
    env = {"PROFILERHUB_HOME": str(tmp_path), "PROFILERHUB_DATABASE_URL": "bogus://x"}
    done = run_cli("db", "upgrade", env=env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "use sqlite:///PATH or postgresql+psycopg://" in " ".join(done.stderr.split())
