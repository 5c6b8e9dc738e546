"""What the fault tests share: services of their own to kill, a CPU hog, and the checks every fault
test ends with.

    redis = PrivateRedis.start(tmp)        # redis-server on a free port; .kill() / .restart() (same port)
    pg = PrivatePostgres.create()          # initdb + pg_ctl (as postgres when root); .stop() / .start()
    cpu_hog()                              # fixture: a process burning one core beside the test
    small_disk()                           # fixture: a 4 MiB tmpfs to fill (root only), fill(path)
    assert_error_shape(answer)             # a 4xx or 503 in the one error shape, no traceback
    assert_settled(database_url)           # no app Pending/Deleting, no job Processing or left waiting
    outage_lines(log_text, "Redis")        # (started, ended) outage lines of one dependency in a log

Setting ``PROFILERHUB_FAULTS_CPU_HOG=1`` runs the hog beside every fault test; the PostgreSQL
module always runs with it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import testservices

from tests.support.hub import wait_for

HOG = "import os\nwhile True:\n    os.getpid()\n"


@pytest.fixture
def cpu_hog() -> Iterator[subprocess.Popen[bytes]]:
    """A process burning a core for the length of the test (no timing bound may break under it)."""
    hog = subprocess.Popen([sys.executable, "-c", HOG])
    yield hog
    hog.kill()
    hog.wait()


@pytest.fixture(autouse=True)
def _cpu_hog_when_asked(request: pytest.FixtureRequest) -> None:
    if os.environ.get("PROFILERHUB_FAULTS_CPU_HOG") == "1":
        request.getfixturevalue("cpu_hog")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted at ``tmp_path/storage`` for the length of the test."""
    mount = tmp_path / "storage"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("filling a disk needs a tmpfs mount, which needs root (CI runs as root)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): no small disk to fill")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to its last block with one file (returned: unlink it to free the space)."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out, pytest.raises(OSError):
        while True:
            out.write(b"\0" * 4096)
    return filler


def assert_error_shape(answer: httpx.Response, *allowed: int) -> dict[str, Any]:
    """The answer is a 4xx (or 503) in ``{"error": {"code", "message"}}`` with no traceback."""
    assert "Traceback" not in answer.text, answer.text[:500]
    assert 400 <= answer.status_code < 500 or answer.status_code == 503 or answer.status_code in allowed, (
        answer.status_code,
        answer.text[:500],
    )
    if allowed:
        assert answer.status_code in allowed, (answer.status_code, answer.text[:300])
    body = answer.json()
    assert set(body) == {"error"} and body["error"]["code"] and body["error"]["message"], body
    return dict(body["error"])


def assert_settled(database_url: str) -> None:
    """Nothing is left in a transient state: no app Pending/Deleting, no job Processing, no
    completed job waiting for an ingest nobody runs."""
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as connection:
            apps = connection.execute(
                sa.text("SELECT id, status FROM apps WHERE status IN ('Pending', 'Deleting')")
            ).all()
            jobs = connection.execute(
                sa.text(
                    "SELECT id, status FROM jobs WHERE status = 'Processing'"
                    " OR (status = 'InProgress' AND completed_at IS NOT NULL)"
                )
            ).all()
    finally:
        engine.dispose()
    assert (apps, jobs) == ([], []), f"stuck apps {apps}, stuck jobs {jobs}"


def outage_lines(text: str, dependency: str) -> tuple[int, int]:
    """How many outage-start and outage-end lines ``text`` has for ``dependency``."""
    lines = text.splitlines()
    started = sum(f" {dependency} unreachable (" in line for line in lines)
    ended = sum(f" {dependency} answers again after " in line for line in lines)
    return started, ended


@dataclass
class PrivateRedis:
    """A redis-server of the test's own, killed and restarted on the same port."""

    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @classmethod
    def start(cls, port: int | None = None) -> PrivateRedis:
        server = shutil.which("redis-server")
        if server is None:
            pytest.fail("redis-server is not installed: apt-get install redis-server")
        port = port or testservices.free_port()
        process = subprocess.Popen(
            [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        redis = cls(port, process)
        wait_for(redis.answers, f"redis-server on port {port}", 60)
        return redis

    def answers(self) -> bool:
        return testservices._redis_answers(self.url)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def restart(self) -> None:
        self.process = PrivateRedis.start(self.port).process

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)


@dataclass
class PrivatePostgres:
    """A PostgreSQL cluster of the test's own (initdb + pg_ctl in a temporary directory), stopped
    and started again mid-test. As root it runs as the ``postgres`` user (initdb refuses root)."""

    data: Path
    port: int
    pg_ctl: str
    run_as: list[str]

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    @classmethod
    def create(cls) -> PrivatePostgres:
        initdb, pg_ctl = testservices._pg_bin("initdb"), testservices._pg_bin("pg_ctl")
        if not (initdb and pg_ctl):
            pytest.skip("initdb/pg_ctl not installed (apt-get install postgresql): no cluster to stop")
        # In /tmp itself: pytest's tmp_path sits under a root-only directory the postgres user cannot enter.
        data = Path(tempfile.mkdtemp(prefix="profilerhub-faults-pg-"))
        run_as = testservices.postgres_owner(str(data))  # as root: the postgres user
        subprocess.run(
            [*run_as, initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
            check=True,
            capture_output=True,
        )
        pg = cls(data, testservices.free_port(), pg_ctl, run_as)
        pg.start()
        return pg

    def start(self) -> None:
        subprocess.run(
            [*self.run_as, self.pg_ctl, "start", "-D", str(self.data), "-l", f"{self.data}/log", "-w", "-o",
             f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off"],
            check=True,
            capture_output=True,
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        subprocess.run(
            [*self.run_as, self.pg_ctl, "stop", "-D", str(self.data), "-m", mode, "-w"],
            check=False,
            capture_output=True,
        )

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.data, ignore_errors=True)


__all__ = [
    "PrivatePostgres",
    "PrivateRedis",
    "assert_error_shape",
    "assert_settled",
    "cpu_hog",
    "fill",
    "outage_lines",
    "small_disk",
]
