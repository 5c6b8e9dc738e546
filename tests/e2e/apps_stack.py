"""Fixtures for end-to-end app tests; test modules import them.

A running stack: a real hub process, real Celery worker and beat processes on a real Redis (a
queue and key prefix of the stack's own), real app processes, a migrated SQLite database.

    shared_stack     one stack per test module, for tests that do not break it
    browser          one headless Chromium per test module (playwright)
    app_stack        factory for a stack of the test's own: ``app_stack(worker=False, **env)``

    stack.user_token("d1", "alice") / stack.create(token, "d1", "alice") / stack.wait_status(...)
    stack.worker.kill(); stack.start_worker(); stack.restart_hub()

Every process a stack started, app instances included, is stopped at teardown.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.pages_stack import launch_browser
from tests.support.hub import STACK_HUB_WORKERS, auth, cli_command, own_token, wait_for

APPS = "/api/v1/domains/{domain}/users/{user}/apps"

# Fast periodic tasks, so crash tests finish in seconds.
FAST = {
    "PROFILERHUB_RECONCILE_SECONDS": "1",
    "PROFILERHUB_APP_POLL_SECONDS": "0.5",
    "PROFILERHUB_APP_RESEND_SECONDS": "2",
    "PROFILERHUB_APP_START_TIMEOUT": "90",  # generous: a loaded machine starts processes slowly
    "PROFILERHUB_APP_HTTP_TIMEOUT": "30",
    "PROFILERHUB_APP_STOP_GRACE": "2",
    "PROFILERHUB_ACTIVITY_WRITE_SECONDS": "0",
    "PROFILERHUB_ACCESS_LOG": "false",
    "PROFILERHUB_SECRET_KEY": "e2e-secret-key-0123456789abcdef",
}


@dataclass
class AppStack:
    home: Path
    env: dict[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    hub: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None
    beat: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.env['PROFILERHUB_PORT']}"

    @property
    def admin(self) -> dict[str, str]:
        return auth((self.home / "admin-token").read_text().strip())

    # -- processes ----------------------------------------------------------------------------

    def start(self, command: str, **env: str) -> subprocess.Popen[bytes]:
        log = self.home.parent / f"{command}-{len(self.processes)}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [*cli_command(), command], env={**self.env, **env}, stdout=sink, stderr=subprocess.STDOUT
            )
        self.processes.append(process)
        return process

    def start_hub(self) -> None:
        self.hub = self.start("hub")
        hub = self.hub

        def answers() -> bool:
            if hub.poll() is not None:
                pytest.fail(f"the hub exited with {hub.returncode}; see its log in {self.home.parent}")
            try:
                return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, "the hub answering /healthz", 180)

    def start_worker(self, **env: str) -> None:
        self.worker = self.start("worker", **env)

    def restart_hub(self) -> None:
        assert self.hub is not None
        self.hub.send_signal(signal.SIGTERM)
        self.hub.wait(20)
        self.start_hub()

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        stop_app_instances(self.home)

    # -- API ----------------------------------------------------------------------------------

    def user_token(self, domain: str, user: str, role: str = "user", **domain_settings: Any) -> str:
        with httpx.Client(base_url=self.url, headers=self.admin, timeout=30) as client:
            if client.get(f"/api/v1/domains/{domain}").status_code == 404:
                client.post("/api/v1/domains", json={"name": domain, "settings": domain_settings})
            client.post(f"/api/v1/domains/{domain}/users", json={"name": user, "role": role})
            return own_token(client, self.admin, domain, user)  # the user's own: no impersonation

    def create(
        self, token: str, domain: str, user: str, name: str = "default", app_type: str = "DetailedProfiler"
    ) -> httpx.Response:
        return httpx.post(
            f"{self.url}{APPS.format(domain=domain, user=user)}",
            headers=auth(token),
            json={"app_type": app_type, "app_name": name},
            timeout=30,
        )

    def delete(self, token: str, domain: str, user: str, name: str = "default") -> httpx.Response:
        return httpx.delete(
            f"{self.url}{APPS.format(domain=domain, user=user)}/DetailedProfiler/{name}",
            headers=auth(token),
            timeout=30,
        )

    def describe(
        self, token: str, domain: str, user: str, name: str = "default", app_type: str = "DetailedProfiler"
    ) -> dict[str, Any]:
        answer = httpx.get(
            f"{self.url}{APPS.format(domain=domain, user=user)}/{app_type}/{name}",
            headers=auth(token),
            timeout=30,
        )
        answer.raise_for_status()
        return answer.json()  # type: ignore[no-any-return]

    def wait_status(
        self,
        token: str,
        domain: str,
        user: str,
        status: str,
        timeout: float = 120,
        name: str = "default",
        app_type: str = "DetailedProfiler",
    ) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        def reached() -> bool:
            seen.update(self.describe(token, domain, user, name, app_type))
            return seen["status"] == status

        what = f"app of {domain}/{user} {status}"
        wait_for(reached, lambda: f"{what} (last seen: {seen.get('status')})", timeout)
        return seen

    def running_app(self, token: str, domain: str, user: str, timeout: float = 120) -> str:
        """Create the user's default app and wait until it is InService; return its id."""
        answer = self.create(token, domain, user)
        assert answer.status_code == 202, answer.text
        self.wait_status(token, domain, user, "InService", timeout)
        return str(answer.json()["app_id"])

    def presigned_url(self, token: str, domain: str, user: str) -> str:
        """A one-time link that opens the user's default profiler app in a browser."""
        answer = httpx.post(
            f"{self.url}{APPS.format(domain=domain, user=user)}/DetailedProfiler/default/presigned-url",
            headers=auth(token),
            timeout=30,
        )
        answer.raise_for_status()
        return str(answer.json()["url"])

    def open(self, token: str, app_id: str) -> httpx.Response:
        return httpx.get(f"{self.url}/apps/{app_id}/", headers=auth(token), timeout=30)

    def instance(self, app_id: str) -> dict[str, Any]:
        """The local spawner's record of the app's process (pid, port)."""
        return json.loads((self.home / "apps" / app_id / "instance.json").read_text())  # type: ignore[no-any-return]


def build_stack(
    root: Path, redis_url: str, *, worker: bool = True, beat: bool = True, **env: str
) -> AppStack:
    """Migrate a SQLite database under ``root`` and start hub (+ worker, beat) on it."""
    import testservices

    from tests.e2e.jobs_stack import migrate_in_process

    root.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    database_url = f"sqlite:///{root / 'hub.db'}"
    migrate_in_process(database_url)
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
    child_env.update(
        FAST,
        PROFILERHUB_HOME=str(home),
        PROFILERHUB_DATABASE_URL=database_url,
        PROFILERHUB_HOST="127.0.0.1",
        PROFILERHUB_PORT=str(testservices.free_port()),
        PROFILERHUB_REDIS_URL=redis_url,
        PROFILERHUB_CELERY_QUEUE=f"phe2e-{uuid.uuid4().hex[:10]}",
        PROFILERHUB_HUB_WORKERS=STACK_HUB_WORKERS,
    )
    child_env.update(env)
    stack = AppStack(home=home, env=child_env)
    try:
        stack.start_hub()
        if worker:
            stack.start_worker()
        if beat:
            stack.beat = stack.start("beat")
    except BaseException:
        stack.stop()
        raise
    return stack


@pytest.fixture(scope="module")
def shared_stack(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[AppStack]:
    stack = build_stack(tmp_path_factory.mktemp("stack"), redis_url)
    yield stack
    stack.stop()


@pytest.fixture
def app_stack(tmp_path: Path, redis_url: str) -> Iterator[Callable[..., AppStack]]:
    stacks: list[AppStack] = []

    def build(**options: Any) -> AppStack:
        stacks.append(build_stack(tmp_path / f"stack{len(stacks)}", redis_url, **options))
        return stacks[-1]

    yield build
    for stack in stacks:
        stack.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch_browser()


def stop_app_instances(home: Path) -> None:
    """Stop every app process the stack's workers left running, all at once: one after another, the
    thirty of a module's apps took ~9 s to stop."""
    from profilerhub_worker.spawners import LocalProcessSpawner, SpawnerConfig

    config = SpawnerConfig(home=home, stop_grace=2)
    found = [
        LocalProcessSpawner.found(app_id, config, state)
        for app_id, state in LocalProcessSpawner.list_instances(config)
    ]
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(LocalProcessSpawner.stop, found))  # a stop that raises, raises here


def pid_alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
