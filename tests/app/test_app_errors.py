"""The profiler app answers every domain error exactly as the hub does (status, code, message and
the headers that go with them): both answer from one table, ``profilerhub_core.errors.HTTP_STATUS``.

Every subclass of ``ProfilerHubError`` that exists when the test runs is checked (the core's tree,
and the app's and hub's own kinds, such as ``BadParameter`` and ``HubRejected``), so an error added
later is covered without touching this test.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import profilerhub_app.http  # noqa: F401 - its error kinds are among those checked
import profilerhub_app.hub  # noqa: F401
from profilerhub_app.main import create_app
from profilerhub_app.settings import AppServiceSettings
from profilerhub_core import errors
from profilerhub_core.apptokens import generate_signing_key, issue_app_token, public_key_pem
from profilerhub_hub.errors import install_error_handlers


def _kinds() -> list[type[errors.ProfilerHubError]]:
    found, todo = [], [errors.ProfilerHubError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return sorted(set(found), key=lambda c: f"{c.__module__}.{c.__qualname__}")


def _make(cls: type[errors.ProfilerHubError]) -> errors.ProfilerHubError:
    """One of ``cls``, its message first, its other required arguments filled in (``retry_after``
    of a throttle a number, anything else a string)."""
    params = list(inspect.signature(cls).parameters.values())[1:]
    extra = [7 if issubclass(cls, errors.Throttled) else "why" for p in params if p.default is p.empty]
    return cls(f"{cls.__name__} says why", *extra)


class RaisingHub:
    """A hub whose job list raises whatever ``error`` holds (the app's routes all ask it first)."""

    error: errors.ProfilerHubError | None = None

    def owner_jobs(self, token: str, job_id: str | None = None, query: Any = None) -> dict[str, Any]:
        assert self.error is not None
        raise self.error


def _answer(response: Any) -> tuple[int, Any, dict[str, str | None]]:
    headers = {name: response.headers.get(name) for name in ("www-authenticate", "retry-after")}
    return response.status_code, response.json(), headers


@pytest.fixture(scope="module")
def clients() -> tuple[TestClient, TestClient]:
    hub_app = FastAPI()
    install_error_handlers(hub_app)  # the hub's handlers, as create_app installs them

    @hub_app.get("/raise")
    def raise_it() -> None:
        assert RaisingHub.error is not None
        raise RaisingHub.error

    key = generate_signing_key()
    settings = AppServiceSettings(id="app-1", owner="alice", owner_id="u-1", public_key=public_key_pem(key))
    app = TestClient(
        create_app(settings, hub=RaisingHub()),
        headers={"Authorization": f"Bearer {issue_app_token(key, 'app-1', 'u-1')}"},
        base_url="http://app/apps/app-1/",
    )
    return TestClient(hub_app, raise_server_exceptions=False), app


@pytest.mark.parametrize("kind", _kinds(), ids=lambda c: c.__name__)
@pytest.mark.parametrize("path", ["api/jobs", "api/jobs/j1/dashboard", "api/jobs/j1/timeline/lanes"])
def test_the_app_answers_each_domain_error_as_the_hub_does(
    clients: tuple[TestClient, TestClient], kind: type[errors.ProfilerHubError], path: str
) -> None:
    hub_client, app_client = clients
    RaisingHub.error = _make(kind)
    hub_says = _answer(hub_client.get("/raise"))
    app_says = _answer(app_client.get(path))
    assert app_says == hub_says
    assert hub_says[1]["error"] == {"code": kind.code, "message": RaisingHub.error.message}


def test_the_table_covers_the_tree_drawn_in_core_errors_but_its_root() -> None:
    for kind in (k for k in _kinds() if k.__module__ == errors.__name__):
        status = errors.http_status(_make(kind))
        assert (status == 500) == (kind is errors.ProfilerHubError), kind
