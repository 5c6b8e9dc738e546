"""LocalProcessSpawner: each app is a ``profilerhub app`` process on this machine.

The process runs in its own session (own process group), so it outlives the worker that
started it and the hub; its output goes to ``{home}/apps/{app_id}/app.log``.  The app binds a
free port itself and writes it to a port file, so two apps never race for one port.  The
state saved on the app row is the pid, the process start time (a recycled pid never passes for
the app) and the port; a copy lies in ``{home}/apps/{app_id}/instance.json`` so the reconciler can
find processes that no app row owns.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import psutil

from profilerhub_worker.spawners.base import (
    AppSpec,
    Spawner,
    SpawnerConfig,
    SpawnError,
    app_arguments,
    wait_for,
)

# What an app process inherits from the worker's environment; everything else it needs is
# passed explicitly (the worker's own secrets, such as the database URL, are not).
_INHERITED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR")
_HOST = "127.0.0.1"
_CREATE_TIME_TOLERANCE = 0.05
_START_MARK = "--- profilerhub: starting app"

# Processes this worker started, by pid: kept so their exit status can be collected (no
# zombies) and so Python does not warn about dropping a running child.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def app_command(app_type: str = "DetailedProfiler") -> list[str]:
    """The command line of ``profilerhub app`` for ``app_type`` using the worker's own interpreter."""
    return [sys.executable, "-m", "profilerhub_app", *app_arguments(app_type)]


class LocalProcessSpawner(Spawner):
    """Runs the app as a local process.  State: ``pid``, ``create_time``, ``port``."""

    kind: ClassVar[str] = "local"
    state_version: ClassVar[int] = 1

    def __init__(self, spec: AppSpec | None, config: SpawnerConfig, *, app_id: str | None = None) -> None:
        super().__init__(spec, config, app_id=app_id)
        self.pid: int | None = None
        self.create_time: float | None = None
        self.port: int | None = None
        self._exit_status: int | None = None

    # -- paths -------------------------------------------------------------------------------

    @staticmethod
    def instances_dir(config: SpawnerConfig) -> Path:
        return config.home / "apps"

    @property
    def app_dir(self) -> Path:
        return self.instances_dir(self.config) / self.app_id

    @property
    def log_path(self) -> Path:
        return self.app_dir / "app.log"

    @property
    def endpoint(self) -> str:
        return f"http://{_HOST}:{self.port}"

    def command(self) -> list[str]:
        """The command line that starts the app; subclasses (test fakes) override it."""
        return app_command(self.require_spec().app_type)

    def environment(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in _INHERITED_ENV if k in os.environ}
        spec = self.require_spec()
        env.update(spec.env)
        env.update(
            PROFILERHUB_APP_ID=spec.app_id,
            PROFILERHUB_APP_OWNER=spec.user,
            PROFILERHUB_APP_OWNER_ID=spec.user_id,
            PROFILERHUB_APP_DOMAIN=spec.domain,
            PROFILERHUB_APP_TYPE=spec.app_type,
            PROFILERHUB_APP_HOST=_HOST,
            PROFILERHUB_APP_PORT_FILE=str(self.app_dir / "port.json"),
            PYTHONUNBUFFERED="1",
        )
        return env

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> str:
        self.require_spec()
        if self.pid is None:
            self._adopt_leftover()  # an earlier attempt (say, by a worker killed mid-spawn)
        if self.poll() is None and self.port is not None and self._healthy():
            return self.endpoint  # a retried start finds the instance already up
        self.stop()
        self.app_dir.mkdir(parents=True, exist_ok=True)
        port_file = self.app_dir / "port.json"
        port_file.unlink(missing_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"{_START_MARK} {time.strftime('%Y-%m-%dT%H:%M:%S')}\n".encode())
            log.flush()
            try:
                proc = subprocess.Popen(
                    self.command(),
                    env=self.environment(),
                    cwd=self.app_dir,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise SpawnError(f"could not start the app process: {exc}") from exc
        self.pid = proc.pid
        _CHILDREN[proc.pid] = proc
        self._exit_status = None
        try:
            self.create_time = psutil.Process(proc.pid).create_time()
        except psutil.NoSuchProcess:
            self.create_time = None
        self._write_instance_file()

        if not wait_for(lambda: port_file.exists() or self.poll() is not None, self.config.start_timeout):
            self._fail(f"the app process did not bind a port within {self.config.start_timeout:g}s")
        if self.poll() is not None:
            self._fail(f"the app process exited during start ({self.poll()})")
        try:
            self.port = int(json.loads(port_file.read_text())["port"])
        except (OSError, ValueError, KeyError) as exc:
            self._fail(f"the app process wrote an unreadable port file: {exc}")
        self._write_instance_file()
        if not wait_for(lambda: self._healthy() or self.poll() is not None, self.config.http_timeout):
            self._fail(f"the app did not answer its health check within {self.config.http_timeout:g}s")
        if self.poll() is not None:
            self._fail(f"the app process exited during start ({self.poll()})")
        return self.endpoint

    def poll(self) -> int | str | None:
        if self.pid is None:
            return 0
        if self._exit_status is None:
            self._exit_status = self._reap()
        if self._exit_status is not None:
            return self._exit_status
        try:
            proc = psutil.Process(self.pid)
            if (
                self.create_time is not None
                and abs(proc.create_time() - self.create_time) > _CREATE_TIME_TOLERANCE
            ):
                return f"process {self.pid} is gone (its pid now belongs to another process)"
            if proc.status() == psutil.STATUS_ZOMBIE:
                return f"process {self.pid} exited"
        except psutil.NoSuchProcess:
            return f"process {self.pid} is gone"
        return None

    def stop(self) -> None:
        if self.pid is not None and self.poll() is None:
            self._signal(signal.SIGTERM)
            if not wait_for(lambda: self.poll() is not None, self.config.stop_grace):
                self._signal(signal.SIGKILL)
                wait_for(lambda: self.poll() is not None, 5.0)
        self.clear_state()

    # -- state -------------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        if self.pid is not None:
            state.update(pid=self.pid, create_time=self.create_time, port=self.port)
        return state

    def load_state(self, state: dict[str, Any] | None) -> None:
        if not state or not self.state_matches(state):
            return
        self.pid = state.get("pid")
        self.create_time = state.get("create_time")
        self.port = state.get("port")

    @classmethod
    def instance_identity(cls, state: dict[str, Any] | None) -> object:
        state = state or {}
        return (state.get("pid"), state.get("create_time"))

    def clear_state(self) -> None:
        self.pid = self.create_time = self.port = self._exit_status = None
        (self.app_dir / "instance.json").unlink(missing_ok=True)

    @classmethod
    def list_instances(cls, config: SpawnerConfig) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(app_id, state)`` of every instance this spawner may have left running here."""
        root = cls.instances_dir(config)
        if not root.is_dir():
            return
        for path in root.glob("*/instance.json"):
            try:
                yield path.parent.name, json.loads(path.read_text())
            except (OSError, ValueError):
                continue

    # -- helpers -----------------------------------------------------------------------------

    def _healthy(self) -> bool:
        try:
            answer = httpx.get(f"{self.endpoint}/apps/{self.app_id}/health", timeout=1.0)
        except httpx.HTTPError:
            return False
        return answer.status_code == 200

    def _reap(self) -> int | None:
        """Collect the exit status if the process is our child and has exited."""
        assert self.pid is not None
        child = _CHILDREN.get(self.pid)
        if child is None or child.poll() is None:
            return None
        del _CHILDREN[self.pid]
        return child.returncode

    def _signal(self, sig: signal.Signals) -> None:
        assert self.pid is not None
        try:
            os.killpg(self.pid, sig)  # the app leads its own group: its children go too
        except ProcessLookupError:
            pass
        except PermissionError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def _adopt_leftover(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.load_state(json.loads((self.app_dir / "instance.json").read_text()))

    def _write_instance_file(self) -> None:
        path = self.app_dir / "instance.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.get_state()))
        tmp.replace(path)

    def _fail(self, reason: str) -> None:
        tail = self._log_tail()
        self.stop()
        raise SpawnError(f"{reason}{': ' + tail if tail else ''}")

    def _log_tail(self, lines: int = 3) -> str:
        try:
            text = (
                self.log_path.read_text(errors="replace").rpartition(_START_MARK)[2].strip().splitlines()[1:]
            )
        except OSError:
            return ""
        return " | ".join(text[-lines:])[-400:]
