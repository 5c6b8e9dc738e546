"""One way into each use case: REST and SageMaker call the same function, which audits once.

The same lifecycle (domain, user profile, app, its opening by impersonation, the deletes) is
driven through each door; every operation writes exactly one audit row, and the rows of the two
doors are equal but for the door they name (``detail.via``). In process (``TestClient``, SigV4
signed by botocore), on SQLite and PostgreSQL; the tasks are recorded, not run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from profilerhub_core.db.models import App, AppStatus, AuditEvent
from profilerhub_core.records.app_states import transition
from profilerhub_core.tasks import DELETE_APP, SPAWN_APP
from profilerhub_hub.sagemaker.model import domain_id
from tests.support.hub import SentTasks, auth

URL = "http://testserver/sagemaker/"
APP = {"AppType": "DetailedProfiler", "AppName": "default"}
Rows = list[tuple[str, str, str, str, dict[str, Any]]]


@pytest.fixture
def sent(client: Any) -> SentTasks:
    client.app.state.services.app_tasks = SentTasks()
    return client.app.state.services.app_tasks  # type: ignore[no-any-return]


def _keys(client: Any, token: str, domain: str, user: str) -> Credentials:
    answer = client.post(f"/api/v1/domains/{domain}/users/{user}/access-keys", json={}, headers=auth(token))
    assert answer.status_code == 201, answer.text
    return Credentials(answer.json()["access_key_id"], answer.json()["secret_access_key"])


def _sagemaker(client: Any, keys: Credentials) -> Callable[..., dict[str, Any]]:
    def call(operation: str, **params: Any) -> dict[str, Any]:
        body = json.dumps(params).encode()
        headers = {"X-Amz-Target": f"SageMaker.{operation}", "Content-Type": "application/x-amz-json-1.1"}
        request = AWSRequest("POST", URL, data=body, headers=headers)
        SigV4Auth(keys, "sagemaker", "us-east-1").add_auth(request)
        answer = client.post(URL, content=body, headers=dict(request.headers.items()))
        assert answer.status_code == 200, answer.text
        return answer.json()  # type: ignore[no-any-return]

    return call


class AuditWatch:
    """The audit rows written since the last look."""

    def __init__(self, seed: Any) -> None:
        self.seed = seed
        self.seen = self._last()

    def _last(self) -> int:
        with self.seed.session() as session:
            return session.scalar(sa.select(sa.func.max(AuditEvent.id))) or 0

    def new(self) -> list[AuditEvent]:
        with self.seed.session() as session:
            rows = session.scalars(
                sa.select(AuditEvent).where(AuditEvent.id > self.seen).order_by(AuditEvent.id)
            )
            found = list(rows)
        if found:
            self.seen = found[-1].id
        return found


def _worker_moves(seed: Any, to: AppStatus) -> None:
    """What the worker does after SPAWN_APP / DELETE_APP, as far as the records go (no process)."""
    with seed.session() as session:
        app = session.scalar(sa.select(App).where(App.status != AppStatus.Deleted))
        assert app is not None
        fields = {"endpoint": "http://127.0.0.1:9"} if to is AppStatus.InService else {}
        assert transition(session, app.id, app.status, to, **fields)
        session.commit()


def _lifecycle(seed: Any, sent: SentTasks, do: dict[str, Callable[[], object]]) -> tuple[Rows, list[str]]:
    """Run the operations ``do`` names, in order, with the worker's moves between; return one
    ``(action, actor, target_type, outcome, detail)`` per operation (asserting it is the only row
    the operation wrote) and the tasks sent."""
    watch, rows = AuditWatch(seed), []
    sent.sent.clear()
    for operation, run in do.items():
        run()
        new = watch.new()
        assert [e.action for e in new] == [operation], (operation, [(e.action, e.detail) for e in new])
        event = new[0]
        rows.append((event.action, event.actor, event.target_type, event.outcome, dict(event.detail)))
        if operation in ("CreateApp", "DeleteApp"):
            _worker_moves(seed, AppStatus.InService if operation == "CreateApp" else AppStatus.Deleted)
            watch.new()  # the worker's own row (AppInService, AppDeleted)
    return rows, [name for name, _ in sent.sent]


def _plain(rows: Rows, via: str) -> list[tuple[str, str, str, str, list[str]]]:
    """The rows with what differs by construction set aside: the door's name (checked here) and
    the values of the details (the domain's name, ids, settings), keeping which members they have."""
    out = []
    for action, actor, target_type, outcome, detail in rows:
        assert detail.pop("via") == via, (action, detail)
        out.append((action, actor, target_type, outcome, sorted(detail)))
    return out


def test_each_operation_writes_one_audit_row_and_both_doors_write_the_same(
    client: Any, seed: Any, sent: SentTasks
) -> None:
    admin = seed.admin_token
    sm = _sagemaker(client, _keys(client, admin, "system", "admin"))

    def rest(method: str, path: str, body: dict[str, Any] | None = None) -> Callable[[], object]:
        def run() -> object:
            answer = client.request(method, "/api/v1/domains" + path, json=body, headers=auth(admin))
            assert answer.is_success, answer.text
            return answer

        return run

    rest_rows, rest_tasks = _lifecycle(seed, sent, {
        "CreateDomain": rest("POST", "", {"name": "by-rest"}),
        "UpdateDomain": rest("PATCH", "/by-rest", {"settings": {"max_live_apps": 5}}),
        "CreateUserProfile": rest("POST", "/by-rest/users", {"name": "ann", "role": "user"}),
        "CreateApp": rest("POST", "/by-rest/users/ann/apps", {}),
        "DeleteApp": rest("DELETE", "/by-rest/users/ann/apps/DetailedProfiler/default"),
        "DeleteUserProfile": rest("DELETE", "/by-rest/users/ann"),
        "DeleteDomain": rest("DELETE", "/by-rest"),
    })  # fmt: skip

    ids: dict[str, str] = {}

    def create_domain() -> None:
        ids["DomainId"] = sm("CreateDomain", DomainName="by-sm", AuthMode="IAM", DefaultUserSettings={})[
            "DomainId"
        ]

    sm_rows, sm_tasks = _lifecycle(seed, sent, {
        "CreateDomain": create_domain,
        "UpdateDomain": lambda: sm("UpdateDomain", **ids, DefaultUserSettings={}),
        "CreateUserProfile": lambda: sm("CreateUserProfile", **ids, UserProfileName="ann"),
        "CreateApp": lambda: sm("CreateApp", **ids, UserProfileName="ann", **APP),
        "DeleteApp": lambda: sm("DeleteApp", **ids, UserProfileName="ann", **APP),
        "DeleteUserProfile": lambda: sm("DeleteUserProfile", **ids, UserProfileName="ann"),
        "DeleteDomain": lambda: sm("DeleteDomain", **ids),
    })  # fmt: skip

    assert rest_tasks == sm_tasks == [SPAWN_APP, DELETE_APP]
    # SageMaker's UpdateDomain stores its own fields besides the settings it changes (none).
    assert next(r for r in sm_rows if r[0] == "UpdateDomain")[4].pop("stored") == ["DefaultUserSettings"]
    assert _plain(rest_rows, "api") == _plain(sm_rows, "sagemaker")
    assert rest_rows[0][1] == "system/admin" and rest_rows[4][4] == sm_rows[4][4] | {
        "app_id": rest_rows[4][4]["app_id"]
    }


def test_opening_by_impersonation_is_audited_once_by_either_door(client: Any, seed: Any) -> None:
    admin = seed.admin_token
    seed.domain("imp", allow_impersonation=True)
    seed.user("imp", "carol")
    assert (
        client.post("/api/v1/domains/imp/users/carol/apps", json={}, headers=auth(admin)).status_code == 202
    )
    _worker_moves(seed, AppStatus.InService)
    own = seed.token("imp", "carol")  # carol's own: opening her app is no impersonation
    made_for_carol = client.post("/api/v1/domains/imp/users/carol/tokens", json={}, headers=auth(admin))
    sm = _sagemaker(client, _keys(client, admin, "imp", "carol"))
    with seed.session() as session:
        imp = domain_id(session.scalar(sa.select(App.domain_id)))
    watch = AuditWatch(seed)
    url = "/api/v1/domains/imp/users/carol/apps/DetailedProfiler/default/presigned-url"
    assert client.post(url, headers=auth(own)).status_code == 200
    assert watch.new() == []  # the owner opening their own app: no change, no row
    assert client.post(url, headers=auth(made_for_carol.json()["token"])).status_code == 200
    assert "token=" in sm("CreatePresignedDomainUrl", DomainId=imp, UserProfileName="carol")["AuthorizedUrl"]
    rows = [(e.action, e.actor, e.target_type, e.detail) for e in watch.new()]
    opened = {"impersonation": True, "as": "imp/carol"}
    assert rows == [
        ("OpenApp", "system/admin", "App", opened | {"via": "api"}),
        ("OpenApp", "system/admin", "App", opened | {"via": "sagemaker"}),
    ]


def test_stopping_a_job_is_audited_once_by_either_door_and_asking_again_changes_nothing(
    client: Any, seed: Any
) -> None:
    token = seed.user_token("d1", "alice")
    jobs = "/api/v1/domains/d1/users/alice/jobs"
    by_rest, by_sm = (client.post(jobs, json={"name": n}, headers=auth(token)).json()["job_id"] for n in "ab")
    sm = _sagemaker(client, _keys(client, token, "d1", "alice"))
    watch = AuditWatch(seed)
    for _ in range(2):  # the second ask finds the stop asked for already: no row
        assert client.post(f"{jobs}/{by_rest}/stop", headers=auth(token)).status_code == 202
        assert sm("StopTrainingJob", TrainingJobName=by_sm) == {}
    rows = [(e.action, e.actor, e.target_type, e.target, e.detail) for e in watch.new()]
    assert rows == [
        ("StopJob", "d1/alice", "Job", by_rest, {"via": "api"}),
        ("StopJob", "d1/alice", "Job", by_sm, {"via": "sagemaker"}),
    ]
