"""Session-wide fixtures: real services the suite runs against.

PostgreSQL and Redis are found or started by ``infra/testservices.py``; what was used or
started is printed at the top and bottom of the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import testservices  # infra/, on the path through pytest's `pythonpath` setting (pyproject.toml)

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"

# Fixtures shared across the tree, as plugins: the hub and what builds on it, app lifecycle, jobs;
# and mypy run beside the suite for tests/test_lint.py.
pytest_plugins = [
    "tests.support.hub",
    "tests.support.apps_fixtures",
    "tests.support.jobs_fixtures",
    "tests.support.sagemaker",
    "tests.support.lint",
]


# Under pytest-xdist (`make test`), a worker arrives with COLUMNS=80 and LINES=24 set when the run
# had neither (GNU readline sets them once imported without a terminal), and every command a test
# starts then wraps its output at 80 columns, as in no serial run: a link or a path broken in two.
# So each worker gets the run's own values back.
TERMINAL_SIZE = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """(xdist, in the controller) Hand each worker the run's terminal-size variables."""
    given = {name: os.environ[name] for name in TERMINAL_SIZE if name in os.environ}
    node.workerinput["terminal_size"] = given


def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        given = workerinput.get("terminal_size", {})
        for name in TERMINAL_SIZE:
            if name in given:
                os.environ[name] = given[name]
            else:
                os.environ.pop(name, None)


@pytest.fixture(autouse=True)
def _spill_dir_of_its_own(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs spill undelivered files to a folder of the test's own, never the user's cache."""
    root = tmp_path_factory.mktemp("spill")
    monkeypatch.setenv("PROFILERHUB_SPILL_DIR", str(root))
    return root


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """SQLAlchemy URL of a real PostgreSQL database (found or started)."""
    return testservices.ensure_postgres()


@pytest.fixture
def fresh_postgres_url(postgres_url: str) -> Iterator[str]:
    """A new, empty PostgreSQL database of its own, dropped afterwards.

    Several test runs may share one server, so nothing uses the ``test`` database directly.
    """
    url = testservices.create_database(postgres_url)
    yield url
    testservices.drop_database(url)


@pytest.fixture(scope="session")
def redis_url() -> str:
    """URL of a real Redis server (found or started)."""
    return testservices.ensure_redis()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[dict[str, str]]:
    """moto's S3 API served over real HTTP on a free port.

    Yields ``{"endpoint_url", "region", "access_key", "secret_key"}``; the credentials are dummies
    that moto accepts. Note: moto does not check presigned-URL signatures.
    """
    from moto.server import ThreadedMotoServer

    port = testservices.free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield {
            "endpoint_url": f"http://127.0.0.1:{port}",
            "region": "us-east-1",
            "access_key": "testing",
            "secret_key": "testing",
        }
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_server: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """A new, empty bucket on the moto server; AWS_* variables point boto3 at it."""
    import uuid

    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server["access_key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server["secret_key"])
    monkeypatch.setenv("AWS_DEFAULT_REGION", s3_server["region"])
    name = f"phtest-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server["endpoint_url"], region_name=s3_server["region"]).create_bucket(
        Bucket=name
    )
    return name


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared beside the checkout (traces, oracle); CI lays it there too."""
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: the tests read sample traces from ../shared beside the clone")
    return SHARED


@pytest.fixture(scope="session", autouse=True)
def _stop_services() -> Iterator[None]:
    yield
    testservices.stop_all()


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller prints what the workers used
        workeroutput["testservices"] = list(testservices.REPORT)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """(xdist, in the controller) Gather what each worker used or started, once per line."""
    for line in getattr(node, "workeroutput", {}).get("testservices", []):
        if line not in testservices.REPORT:
            testservices.REPORT.append(line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if testservices.REPORT:
        terminalreporter.section("test services")
        for line in testservices.REPORT:
            terminalreporter.write_line(line)
