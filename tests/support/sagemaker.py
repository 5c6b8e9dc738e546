"""The hub served over real HTTP for boto3 and the AWS CLI, with app tasks run by a worker thread.

``sagemaker_hub`` is the apps tests' in-process hub (real Redis, real app processes) behind uvicorn
on a loopback port; its task sender runs each lifecycle task (``lifecycle.spawn`` / ``.delete``,
the functions the Celery worker runs) in a thread of its own, as a worker would, after the
request has committed. ``keys(domain, user)`` issues an access key through the REST route and
``client(keys)`` is boto3's own ``sagemaker`` client pointed at the hub.

``check_output(client, operation, response)`` validates a parsed answer against botocore's
output shape for the operation (the test-side half of "every response matches the model").
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
import testservices
import uvicorn
from botocore.config import Config
from botocore.validate import ParamValidator

from profilerhub_core.tasks import DELETE_APP, SPAWN_APP
from tests.support.hub import auth, wait_for


@dataclass
class ThreadedTasks:
    """A task sender that runs the worker's lifecycle functions in threads (a worker's job)."""

    ctx: Any
    threads: list[threading.Thread] = field(default_factory=list)
    sent: list[tuple[str, str]] = field(default_factory=list)

    def send(self, task_name: str, resource_id: str) -> None:
        from profilerhub_worker import lifecycle

        task = {SPAWN_APP: lifecycle.spawn, DELETE_APP: lifecycle.delete}[task_name]
        self.sent.append((task_name, resource_id))
        thread = threading.Thread(target=task, args=(self.ctx, resource_id), daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(60)


@dataclass(frozen=True)
class Keys:
    access_key_id: str
    secret_access_key: str


@contextlib.contextmanager
def served(app: Any) -> Iterator[Any]:
    """``app`` behind uvicorn on a loopback port (``app.state.url``) while the block runs."""
    port = testservices.free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "the hub serving", 30)
    app.state.url = f"http://127.0.0.1:{port}"
    try:
        yield app
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def sagemaker_hub(apps_hub: Any, worker_ctx: Any) -> Iterator[Any]:
    tasks = ThreadedTasks(worker_ctx)
    apps_hub.state.services.app_tasks = tasks
    with served(apps_hub):
        yield apps_hub
        tasks.join()


@pytest.fixture
def jobs_door(jobs_hub: Any) -> Iterator[Any]:
    """The jobs tests' hub (``jobs_hub``: its own local store, recorded tasks) over real HTTP."""
    with served(jobs_hub):
        yield jobs_hub


def aws_client(service: str, hub: Any, keys: Keys, path: str | None = None) -> Any:
    """boto3's own ``service`` client against the hub's door ``/{path or service}``."""
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=f"{hub.state.url}/{path or service}",
        region_name="us-east-1",
        aws_access_key_id=keys.access_key_id,
        aws_secret_access_key=keys.secret_access_key,
        config=Config(retries={"max_attempts": 1}),
    )


def issue_key(client: Any, token: str, domain: str, user: str) -> Keys:
    """An access key of ``domain/user`` made with ``token`` (POST …/access-keys)."""
    answer = client.post(
        f"/api/v1/domains/{domain}/users/{user}/access-keys", json={"note": "tests"}, headers=auth(token)
    )
    assert answer.status_code == 201, answer.text
    return Keys(answer.json()["access_key_id"], answer.json()["secret_access_key"])


@pytest.fixture
def issue_keys(apps_client: Any, seed: Any) -> Any:
    """``issue_keys(domain, user, role)``: seed the user, then POST …/access-keys with a token of
    the user's own (``token=``: someone else's, whose key then impersonates the user)."""

    def issue(domain: str, user: str, role: str = "user", token: str | None = None) -> Keys:
        own = seed.user_token(domain, user, role)
        answer = apps_client.post(
            f"/api/v1/domains/{domain}/users/{user}/access-keys",
            json={"note": "tests"},
            headers=auth(token or own),
        )
        assert answer.status_code == 201, answer.text
        body = answer.json()
        return Keys(body["access_key_id"], body["secret_access_key"])

    return issue


@pytest.fixture
def sm_client(sagemaker_hub: Any) -> Any:
    """``sm_client(keys)``: boto3's sagemaker client against the hub, signed with ``keys``."""

    def make(keys: Keys, **options: Any) -> Any:
        return boto3.client(
            "sagemaker",
            endpoint_url=f"{sagemaker_hub.state.url}/sagemaker",
            region_name="us-east-1",
            aws_access_key_id=keys.access_key_id,
            aws_secret_access_key=keys.secret_access_key,
            config=Config(retries={"max_attempts": 1}, **options),
        )

    return make


def check_output(client: Any, operation: str, response: dict[str, Any]) -> dict[str, Any]:
    """Assert ``response`` (parsed by botocore) fits the operation's output shape in the model."""
    op = client.meta.service_model.operation_model(operation)
    body = {k: v for k, v in response.items() if k != "ResponseMetadata"}
    if op.output_shape is None:
        assert body == {}
        return response
    report = ParamValidator().validate(body, op.output_shape)
    assert not report.has_errors(), report.generate_report()
    _check_enums(op.output_shape, body)
    return response


def _check_enums(shape: Any, value: Any) -> None:
    """ParamValidator skips enums and patterns: check the enums (statuses, app types) too."""
    if shape.type_name == "structure":
        for name, member in shape.members.items():
            if name in value:
                _check_enums(member, value[name])
    elif shape.type_name == "list":
        for item in value:
            _check_enums(shape.member, item)
    elif shape.type_name == "string" and shape.enum:
        assert value in shape.enum, f"{value!r} is not one of {shape.name}'s {shape.enum}"
