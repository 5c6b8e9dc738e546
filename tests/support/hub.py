"""Fixtures for testing the hub and anything built on it (apps, jobs, console).

Registered for the whole suite by ``pytest_plugins`` in ``tests/conftest.py``.
Everything is built through production code: the Alembic migrations, ``create_app``, the model
functions in ``profilerhub_core.records``, ``profilerhub up``/``hub`` as real processes.

Databases (every fixture marked *both* runs each test twice: ``[sqlite]`` and ``[postgresql]``;
select one with ``-k sqlite``):

    db_url          both. An EMPTY database: a SQLite file in tmp_path, or ``fresh_postgres_url``.
                    For migration tests and subprocess hubs that migrate themselves.
    hub_db_url      both. A MIGRATED database with no rows (migrated once per session per backend,
                    emptied before each test; much faster than migrating per test).

The in-process hub:

    hub_settings    ``Settings`` for a hub on ``hub_db_url`` (home in a temporary directory; rate limits
                    off, see tests/hub/test_hub_rate_limits.py). For other
                    settings: ``create_app(hub_settings.model_copy(update={...}))`` in the test
                    (and ``app.state.services.engine.dispose()`` after).
    hub_app         ``create_app(hub_settings)``, built once per backend per session (building an
                    app costs ~0.1 s); the database under it is emptied before each test.
    client          a ``TestClient`` on ``hub_app`` (no auth header by default).
    seed            a ``Seed`` on the same database: the platform admin's token and helpers that
                    create domains, users and tokens through the model functions (committed):
                        seed.admin_token                      platform admin (system/admin)
                        seed.domain("d1", users_manage_own_apps=False)   -> Domain row
                        seed.user("d1", "alice", role="user")            -> UserProfile (makes d1 if missing)
                        seed.token("d1", "alice", expires_in_seconds=..., scopes=[...]) -> secret
                        seed.user_token("d1", "alice", role="admin")     -> secret (user made if missing)
                        seed.session()                        a Session on the hub's database
                        seed.reset()                          empty the database, new admin token
                        auth(token)                           -> {"Authorization": "Bearer ..."}

Real processes:

    hub_process     factory: ``hub_process("up")`` or ``hub_process("hub")`` starts
                    ``profilerhub <command>`` on a free port with its own home (or ``home=``,
                    ``database_url=``, ``env={...}``, ``args=[...]``, ``wait=False`` to not wait for
                    /healthz) and returns a ``RunningHub``: ``.url``, ``.home``, ``.process``,
                    ``.admin_token()``, ``.output()``, ``.wait_for_output(text)``, ``.stop()``
                    (``port=`` when the port must be known first, e.g. for a redirect URI).
                    Every process it started is stopped at teardown.
    start_profilerhub  the same for fixtures of a wider scope: ``start_profilerhub("hub", home=...,
                    log=..., ...)``; the caller stops it.
    migrate(database_url, home)   ``profilerhub db upgrade`` (``hub`` never migrates by itself)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import testservices

TEST_SECRET_KEY = "test-secret-key-0123456789abcdef"
BACKENDS = ["sqlite", "postgresql"]
# Hub processes of the end-to-end stacks (tests/e2e/*_stack.py) and of the `up`s whose tests are not
# about them: one, as a second costs a full import and app build at every hub start and stop (~1 s of
# CPU, seconds of wall). Several processes serving one hub are pinned where they are the subject:
# tests/hub/test_hub_cli.py (`up` at the default count) and tests/hub/test_hub_replicas.py.
STACK_HUB_WORKERS = "1"


def auth(token: str) -> dict[str, str]:
    """The header that authenticates as ``token``."""
    return {"Authorization": f"Bearer {token}"}


# Names no test user or domain (the hub refuses a password holding its user's or domain's name;
# "fern-…" failed for user fern).
TEST_PASSWORD = "quartz-meadow-sundial-31"


def own_token(client: Any, admin: dict[str, str], domain: str, user: str) -> str:
    """A new token of ``domain/user``'s own, as a person gets one (never an administrator's
    making): the first time, the administrator (``admin``: their headers) invites and the user
    chooses ``TEST_PASSWORD`` with the link (``POST /sign-in/invitation``); after that the user
    signs in with it (``POST /sign-in/password``). ``client``'s base URL is the hub."""
    base = f"/api/v1/domains/{domain}/users/{user}/invitations"
    listed = client.get(base, headers=admin)
    assert listed.status_code == 200, listed.text
    if any(i["status"] == "used" for i in listed.json()["items"]):
        body = {"domain": domain, "user": user, "password": TEST_PASSWORD, "note": "test"}
        answer = client.post("/api/v1/sign-in/password", json=body)
    else:
        invited = client.post(base, json={}, headers=admin)
        assert invited.status_code == 201, invited.text
        body = {"invitation": invited.json()["url"], "password": TEST_PASSWORD, "note": "test"}
        answer = client.post("/api/v1/sign-in/invitation", json=body)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["token"])


T = TypeVar("T")


def wait_for(
    check: Callable[[], T], what: str | Callable[[], str], timeout: float = 30.0, interval: float = 0.05
) -> T:
    """Poll ``check`` until it returns something true, and return that; fail the test naming
    ``what`` (or what it returns, asked only then) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if got := check():
            return got
        time.sleep(interval)
    pytest.fail(f"{what() if callable(what) else what} did not happen within {timeout:.0f}s")


@dataclass
class SentTasks:
    """Stands in for the hub's task sender (``app.state.services.app_tasks``): records
    ``(task_name, resource_id)`` instead of sending."""

    sent: list[tuple[str, str]] = field(default_factory=list)

    def send(self, task_name: str, resource_id: str) -> None:
        self.sent.append((task_name, resource_id))


# --------------------------------------------------------------------------- databases


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database on each backend (SQLite file; PostgreSQL via ``fresh_postgres_url``)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'empty.db'}"
    return str(request.getfixturevalue("fresh_postgres_url"))


def empty_database(engine: Any) -> None:
    """Delete every row of every table (keeps the schema)."""
    from profilerhub_core.db.models import Base

    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())


@dataclass
class _MigratedDatabases:
    """One migrated database per backend for the whole session, emptied before each test."""

    tmp: Path
    urls: dict[str, str] = field(default_factory=dict)
    engines: dict[str, Any] = field(default_factory=dict)
    created_pg: list[str] = field(default_factory=list)

    def get(self, backend: str, postgres_url: Callable[[], str]) -> str:
        from profilerhub_core.db.migrate import upgrade
        from profilerhub_core.db.session import make_engine

        if backend not in self.urls:
            if backend == "sqlite":
                url = f"sqlite:///{self.tmp / 'hub.db'}"
            else:
                url = testservices.create_database(postgres_url())
                self.created_pg.append(url)
            engine = make_engine(url)
            upgrade(engine)
            self.urls[backend], self.engines[backend] = url, engine
        empty_database(self.engines[backend])
        return self.urls[backend]

    def close(self) -> None:
        for engine in self.engines.values():
            engine.dispose()
        for url in self.created_pg:
            testservices.drop_database(url)


@pytest.fixture(scope="session")
def _migrated_databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_MigratedDatabases]:
    databases = _MigratedDatabases(tmp_path_factory.mktemp("hubdb"))
    yield databases
    databases.close()


@pytest.fixture(params=BACKENDS)
def hub_db_url(request: pytest.FixtureRequest, _migrated_databases: _MigratedDatabases) -> str:
    """A migrated, empty database on each backend."""
    return _migrated_databases.get(request.param, lambda: str(request.getfixturevalue("postgres_url")))


# --------------------------------------------------------------------------- in-process hub


@dataclass
class _Hub:
    settings: Any
    app: Any


@pytest.fixture(scope="session")
def _hubs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, _Hub]]:
    # Building a FastAPI app compiles every route's models (~0.1 s): one app per backend per session.
    hubs: dict[str, _Hub] = {}
    yield hubs
    for hub in hubs.values():
        if hub.app is not None:  # settings were used without ever building the app
            hub.app.state.services.engine.dispose()


@pytest.fixture
def hub_settings(hub_db_url: str, _hubs: dict[str, _Hub], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Settings of the in-process hub on ``hub_db_url`` (shared by the tests of one backend)."""
    from profilerhub_core.settings import Settings

    if hub_db_url not in _hubs:
        settings = Settings(
            home=tmp_path_factory.mktemp("hubhome"),
            database_url=hub_db_url,
            secret_key=TEST_SECRET_KEY,  # type: ignore[arg-type]
            environment="development",
            access_log=False,
            # The suite signs in and fails tokens from one address ("testclient") many times a
            # minute; the rate limits have their own tests, with their own apps.
            rate_limit_signin=0,
            rate_limit_presigned=0,
            rate_limit_token_failures=0,
            rate_limit_password_failures_account=0,
            rate_limit_password_failures_address=0,
        )
        _hubs[hub_db_url] = _Hub(settings, None)
    return _hubs[hub_db_url].settings


@pytest.fixture
def hub_app(hub_settings: Any, _hubs: dict[str, _Hub]) -> Any:
    """``create_app(hub_settings)``; for other settings build your own with ``create_app``."""
    from profilerhub_hub.main import create_app

    hub = _hubs[hub_settings.database_url]
    if hub.app is None:
        hub.app = create_app(hub_settings)
    return hub.app


@pytest.fixture
def client(hub_app: Any) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    with TestClient(hub_app) as test_client:
        yield test_client


class Seed:
    """Creates records through the model functions and commits them; see the module docstring."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._sessions = app.state.services.sessions
        self.admin_token: str = self._bootstrap()

    def _bootstrap(self) -> str:
        from profilerhub_core.bootstrap import first_start

        secret = first_start(self.app.state.services.settings, self.app.state.services.engine)
        assert secret is not None, "seed expects a database without a platform admin"
        return secret

    def reset(self) -> None:
        """Empty the database and create the platform admin again (new ``admin_token``)."""
        empty_database(self.app.state.services.engine)
        self.admin_token = self._bootstrap()

    def session(self) -> Any:
        return self._sessions()

    def domain(self, name: str, **settings: Any) -> Any:
        from profilerhub_core.records import domains

        with self.session() as session:
            domain = domains.get_domain(session, name) or domains.create_domain(
                session, name, settings or None
            )
            session.commit()
            return domain

    def user(self, domain: str, name: str, role: str = "user") -> Any:
        from profilerhub_core.db.models import Role
        from profilerhub_core.records import domains, users

        self.domain(domain)
        with self.session() as session:
            row = domains.require_domain(session, domain)
            user = users.get_user(session, row, name) or users.create_user(session, row, name, Role(role))
            session.commit()
            return user

    def token(
        self,
        domain: str,
        user: str,
        *,
        expires_in_seconds: int | None = None,
        scopes: Sequence[str] = ("*",),
        note: str = "seed",
    ) -> str:
        from profilerhub_core.records import domains, tokens, users

        with self.session() as session:
            row = users.get_user(session, domains.require_domain(session, domain), user)
            assert row is not None, f"no user {domain}/{user}; seed.user() it first"
            _, secret = tokens.issue_token(
                session, row, expires_in_seconds=expires_in_seconds, note=note, scopes=scopes
            )
            session.commit()
            return secret

    def user_token(self, domain: str, name: str, role: str = "user", **token_options: Any) -> str:
        self.user(domain, name, role)
        return self.token(domain, name, **token_options)


@pytest.fixture
def seed(hub_app: Any) -> Seed:
    return Seed(hub_app)


# --------------------------------------------------------------------------- real processes


def cli_command() -> list[str]:
    """How to run ``profilerhub`` with this interpreter (the console script when installed)."""
    script = Path(sys.executable).with_name("profilerhub")
    return [str(script)] if script.exists() else [sys.executable, "-m", "profilerhub.cli.main"]


def migrate(database_url: str, home: Path) -> None:
    """``profilerhub db upgrade`` on ``database_url`` (what a hub started with ``hub`` needs first)."""
    env = {"PATH": "/usr/bin:/bin", "PROFILERHUB_HOME": str(home), "PROFILERHUB_DATABASE_URL": database_url}
    upgrade = subprocess.run(
        [*cli_command(), "db", "upgrade"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert upgrade.returncode == 0, upgrade.stderr


@dataclass
class RunningHub:
    process: subprocess.Popen[bytes]
    url: str
    home: Path
    log: Path
    env: dict[str, str]

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for_output(self, text: str, timeout: float = 30.0) -> None:
        wait_for(lambda: text in self.output(), f"output {text!r}", timeout)

    def admin_token(self) -> str:
        return (self.home / "admin-token").read_text().strip()

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def wait_until_up(self, timeout: float = 180.0) -> None:
        """Wait for /healthz to answer; fail with the output if the process exits first."""
        wait_for(
            lambda: self.healthy() or self.process.poll() is not None,
            "profilerhub answering /healthz",
            timeout,
        )
        if self.process.poll() is not None:
            pytest.fail(f"profilerhub exited with {self.process.returncode}:\n{self.output()}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                pytest.fail(f"profilerhub did not stop within {timeout:.0f}s of {signal.Signals(sig).name}")
        return self.process.returncode


def start_profilerhub(
    command: str,
    *,
    home: Path,
    log: Path,
    database_url: str | None = None,
    env: dict[str, str] | None = None,
    args: Sequence[str] = (),
    wait: bool = True,
    timeout: float = 180.0,
    port: int | None = None,
) -> RunningHub:
    """Start ``profilerhub <command>`` on ``port`` (else a free one; what ``hub_process`` does, for
    fixtures of other scopes); the caller stops it."""
    port = port or testservices.free_port()
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
    child_env.update(PROFILERHUB_HOME=str(home), PROFILERHUB_PORT=str(port), PROFILERHUB_HOST="127.0.0.1")
    if database_url:
        child_env["PROFILERHUB_DATABASE_URL"] = database_url
    child_env.update(env or {})
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*cli_command(), command, *args], env=child_env, stdout=sink, stderr=subprocess.STDOUT
        )
    running = RunningHub(process, f"http://127.0.0.1:{port}", home, log, child_env)
    if wait:
        try:
            running.wait_until_up(timeout)
        except BaseException:
            running.stop()
            raise
    return running


@pytest.fixture
def hub_process(tmp_path: Path) -> Iterator[Callable[..., RunningHub]]:
    started: list[RunningHub] = []

    def start(
        command: str = "up",
        *,
        home: Path | None = None,
        wait: bool = True,
        timeout: float = 180.0,
        **options: Any,
    ) -> RunningHub:
        """``options``: ``database_url``, ``env``, ``args``, ``port``, as ``start_profilerhub`` takes them."""
        log = tmp_path / f"{command}-{len(started)}.log"
        home = home or tmp_path / f"home-{len(started)}"
        running = start_profilerhub(command, home=home, log=log, wait=False, **options)
        started.append(running)
        if wait:
            running.wait_until_up(timeout)
        return running

    yield start
    for running in started:
        running.stop()
