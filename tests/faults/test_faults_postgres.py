"""PostgreSQL stopped under a running hub and worker (a private cluster, stopped and started again),
with a CPU hog beside it: every answer meanwhile is a 503 in the error shape (never a 500 or a
traceback), each process logs the outage in two lines, and everything works again once it is back."""

from __future__ import annotations

import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.faults.faults import PrivatePostgres, assert_error_shape, assert_settled, outage_lines
from tests.support.hub import TEST_SECRET_KEY, auth, cli_command, wait_for

pytestmark = pytest.mark.usefixtures("cpu_hog")


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    pg = PrivatePostgres.create()
    yield pg
    pg.remove()


def _start(command: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen([*cli_command(), command], env=env, stdout=sink, stderr=subprocess.STDOUT)


class Traffic:
    """Requests sent in a loop from a thread while the database goes away and comes back."""

    def __init__(self, url: str, admin: dict[str, str]) -> None:
        self.answers: list[httpx.Response] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(url, admin), daemon=True)

    def _run(self, url: str, admin: dict[str, str]) -> None:
        with httpx.Client(base_url=url, headers=admin, timeout=60) as client:
            while not self._stop.is_set():
                self.answers.append(client.get("/api/v1/domains"))
                name = f"t{uuid.uuid4().hex[:8]}"
                self.answers.append(client.post("/api/v1/domains", json={"name": name}))

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join(120)

    def refused(self) -> list[httpx.Response]:
        return [a for a in self.answers if a.status_code >= 400]


def test_postgres_stopped_mid_operation_gives_503s_two_log_lines_and_recovers(
    postgres: PrivatePostgres, tmp_path: Path, redis_url: str
) -> None:
    from profilerhub_core.db.migrate import upgrade
    from profilerhub_core.db.session import make_engine

    engine = make_engine(postgres.url)
    upgrade(engine)
    engine.dispose()
    port = __import__("testservices").free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")} | {
        "PROFILERHUB_HOME": str(tmp_path / "home"),
        "PROFILERHUB_DATABASE_URL": postgres.url,
        "PROFILERHUB_PORT": str(port),
        "PROFILERHUB_HUB_WORKERS": "1",
        "PROFILERHUB_SECRET_KEY": TEST_SECRET_KEY,
        "PROFILERHUB_REDIS_URL": redis_url,
        "PROFILERHUB_CELERY_QUEUE": f"phfaults-{uuid.uuid4().hex[:10]}",
        "PROFILERHUB_APP_POLL_SECONDS": "0.5",
        "PROFILERHUB_RECONCILE_SECONDS": "1",
    }
    logs = {name: tmp_path / f"{name}.log" for name in ("hub", "worker", "beat")}
    processes = {name: _start(name, env, log) for name, log in logs.items()}
    url = f"http://127.0.0.1:{port}"
    try:

        def answers() -> bool:
            assert processes["hub"].poll() is None, logs["hub"].read_text()
            try:
                return httpx.get(f"{url}/readyz", timeout=5).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, "the hub ready (database, Redis and a worker)", 180, 0.2)
        admin = auth((tmp_path / "home" / "admin-token").read_text().strip())
        assert httpx.post(f"{url}/api/v1/domains", json={"name": "before"}, headers=admin).status_code == 201

        with Traffic(url, admin) as traffic:
            wait_for(lambda: len(traffic.answers) >= 4, "requests flowing", 120)
            postgres.stop()
            wait_for(lambda: len(traffic.refused()) >= 10, "requests refused while it is down", 120)
            wait_for(lambda: outage_lines(logs["worker"].read_text(), "database")[0] == 1,
                     "the worker noticing the outage", 120)  # fmt: skip
            postgres.start()
            seen = len(traffic.answers)
            wait_for(lambda: any(a.status_code < 300 for a in traffic.answers[seen:]), "answers again", 120)
        for answer in traffic.refused():
            assert_error_shape(answer, 503)
        assert httpx.get(f"{url}/api/v1/domains/before", headers=admin).status_code == 200
        wait_for(lambda: outage_lines(logs["worker"].read_text(), "database") == (1, 1),
                 "the worker's outage-ended line", 120)  # fmt: skip
        wait_for(lambda: outage_lines(logs["hub"].read_text(), "database") == (1, 1),
                 "the hub's outage-ended line", 60)  # fmt: skip
        for name, log in logs.items():
            text = log.read_text()
            expected = (0, 0) if name == "beat" else (1, 1)  # beat never touches the database
            assert outage_lines(text, "database") == expected, (name, text[-3000:])
            assert "Traceback" not in text, (name, text[-3000:])
        print(
            f"\nPostgreSQL stopped: {len(traffic.answers)} requests, {len(traffic.refused())} answered 503, "
            f"{sum(a.status_code >= 500 and a.status_code != 503 for a in traffic.answers)} other 5xx"
        )
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            process.wait(30)
    assert_settled(postgres.url)
