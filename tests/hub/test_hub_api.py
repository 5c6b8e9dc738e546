"""The API end to end (in process), on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from profilerhub_core.db.models import ApiToken, App, AppType, utcnow
from tests.support.hub import auth

API = "/api/v1"


def error_code(response: Any) -> str:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return str(body["error"]["code"])


def test_domain_lifecycle_create_read_update_delete(client: Any, seed: Any) -> None:
    admin = auth(seed.admin_token)
    created = client.post(
        f"{API}/domains", json={"name": "research", "settings": {"idle_minutes": 30}}, headers=admin
    )
    assert created.status_code == 201
    assert created.json()["settings"] == {
        "idle_minutes": 30,
        "users_manage_own_apps": True,
        "allow_impersonation": False,
        "create_users_on_sign_in": False,
        "max_live_apps": 50,
        "job_idle_hours": 24,
        "user_storage_quota_bytes": 0,
        "app_cpu_request": "",
        "app_cpu_limit": "",
        "app_memory_request": "",
        "app_memory_limit": "",
        "rules": [],
    }
    assert created.json()["status"] == "InService"

    assert client.get(f"{API}/domains/research", headers=admin).json()["name"] == "research"
    patched = client.patch(
        f"{API}/domains/research",
        json={"settings": {"users_manage_own_apps": False, "job_idle_hours": 6}},
        headers=admin,
    )
    assert patched.status_code == 200
    assert patched.json()["settings"] == {
        "idle_minutes": 30,
        "users_manage_own_apps": False,
        "allow_impersonation": False,
        "create_users_on_sign_in": False,
        "max_live_apps": 50,
        "job_idle_hours": 6,
        "user_storage_quota_bytes": 0,
        "app_cpu_request": "",
        "app_cpu_limit": "",
        "app_memory_request": "",
        "app_memory_limit": "",
        "rules": [],
    }

    assert client.delete(f"{API}/domains/research", headers=admin).status_code == 204
    gone = client.get(f"{API}/domains/research", headers=admin)
    assert gone.status_code == 404 and error_code(gone) == "ResourceNotFound"


def test_duplicate_domain_name_is_a_conflict(client: Any, seed: Any) -> None:
    seed.domain("d1")
    response = client.post(f"{API}/domains", json={"name": "d1"}, headers=auth(seed.admin_token))
    assert response.status_code == 409 and error_code(response) == "ResourceInUse"


def test_domain_with_users_cannot_be_deleted(client: Any, seed: Any) -> None:
    seed.user("d1", "alice")
    admin = auth(seed.admin_token)
    response = client.delete(f"{API}/domains/d1", headers=admin)
    assert response.status_code == 409 and error_code(response) == "ResourceInUse"
    assert "user profile" in response.json()["error"]["message"]
    assert client.delete(f"{API}/domains/d1/users/alice", headers=admin).status_code == 204
    assert client.delete(f"{API}/domains/d1", headers=admin).status_code == 204


def test_system_domain_cannot_be_deleted(client: Any, seed: Any) -> None:
    response = client.delete(f"{API}/domains/system", headers=auth(seed.admin_token))
    assert response.status_code in (400, 409)
    assert client.get(f"{API}/me", headers=auth(seed.admin_token)).status_code == 200


def test_domain_list_pages_with_limit_and_next_token(client: Any, seed: Any) -> None:
    for i in range(5):
        seed.domain(f"d{i}")
    admin = auth(seed.admin_token)
    names: list[str] = []
    token = None
    for _ in range(10):
        params: dict[str, Any] = {"limit": 2} | ({"next_token": token} if token else {})
        page = client.get(f"{API}/domains", params=params, headers=admin).json()
        assert len(page["items"]) <= 2
        names += [d["name"] for d in page["items"]]
        token = page["next_token"]
        if token is None:
            break
    assert names == ["d0", "d1", "d2", "d3", "d4", "system"]


def test_tampered_next_token_is_refused(client: Any, seed: Any) -> None:
    for i in range(3):
        seed.domain(f"d{i}")
    admin = auth(seed.admin_token)
    token = client.get(f"{API}/domains", params={"limit": 1}, headers=admin).json()["next_token"]
    forged = "WyJ6In0" + token[token.index(".") :]
    response = client.get(f"{API}/domains", params={"limit": 1, "next_token": forged}, headers=admin)
    assert response.status_code == 400 and error_code(response) == "ValidationError"
    # a token from one listing is not valid for another
    response = client.get(f"{API}/domains/d0/users", params={"next_token": token}, headers=admin)
    assert response.status_code == 400


def test_limit_over_the_maximum_is_refused(client: Any, seed: Any) -> None:
    response = client.get(f"{API}/domains", params={"limit": 100000}, headers=auth(seed.admin_token))
    assert response.status_code == 400 and "at most" in response.json()["error"]["message"]


def test_user_profiles_create_list_describe_delete(client: Any, seed: Any) -> None:
    seed.domain("d1")
    admin = auth(seed.admin_token)
    for name, role in (("carol", "admin"), ("alice", "user"), ("bob", "user")):
        created = client.post(f"{API}/domains/d1/users", json={"name": name, "role": role}, headers=admin)
        assert created.status_code == 201
        assert created.json() | {"user_id": "", "created_at": ""} == {
            "user_id": "",
            "created_at": "",
            "name": name,
            "domain": "d1",
            "role": role,
            "is_platform_admin": False,
        }
    listed = client.get(f"{API}/domains/d1/users", headers=admin).json()
    assert [u["name"] for u in listed["items"]] == ["alice", "bob", "carol"] and listed["next_token"] is None
    duplicate = client.post(f"{API}/domains/d1/users", json={"name": "alice"}, headers=admin)
    assert duplicate.status_code == 409
    assert client.delete(f"{API}/domains/d1/users/bob", headers=admin).status_code == 204
    assert client.get(f"{API}/domains/d1/users/bob", headers=admin).status_code == 404


def test_same_user_name_may_exist_in_two_domains(client: Any, seed: Any) -> None:
    seed.user("d1", "alice")
    seed.domain("d2")
    response = client.post(f"{API}/domains/d2/users", json={"name": "alice"}, headers=auth(seed.admin_token))
    assert response.status_code == 201


def test_user_with_live_apps_cannot_be_deleted(client: Any, seed: Any) -> None:
    user = seed.user("d1", "alice")
    with seed.session() as session:
        session.add(App(domain_id=user.domain_id, user_id=user.id, app_type=AppType.DetailedProfiler))
        session.commit()
    response = client.delete(f"{API}/domains/d1/users/alice", headers=auth(seed.admin_token))
    assert response.status_code == 409 and "live app" in response.json()["error"]["message"]


def test_last_platform_admin_cannot_be_deleted(client: Any, seed: Any) -> None:
    admin = auth(seed.admin_token)
    response = client.delete(f"{API}/domains/system/users/admin", headers=admin)
    assert response.status_code == 409
    created = client.post(f"{API}/domains/system/users", json={"name": "ops", "role": "admin"}, headers=admin)
    assert created.json()["is_platform_admin"] is True
    bad = client.post(f"{API}/domains/system/users", json={"name": "joe", "role": "user"}, headers=admin)
    assert bad.status_code == 400


def test_token_secret_is_shown_once_and_works_until_revoked(client: Any, seed: Any) -> None:
    seed.user("d1", "alice")
    admin = auth(seed.admin_token)
    created = client.post(
        f"{API}/domains/d1/users/alice/tokens", json={"note": "ci", "expires_in_seconds": 3600}, headers=admin
    )
    assert created.status_code == 201
    body = created.json()
    secret, token_id = body["token"], body["token_id"]
    assert body["expires_at"] is not None and secret.startswith(body["prefix"])

    me = client.get(f"{API}/me", headers=auth(secret)).json()
    assert (me["user"], me["domain"], me["role"], me["token_id"]) == ("alice", "d1", "user", token_id)

    listed = client.get(f"{API}/domains/d1/users/alice/tokens", headers=admin)
    assert secret not in listed.text
    assert [(t["token_id"], t["status"], t["note"]) for t in listed.json()["items"]] == [
        (token_id, "active", "ci")
    ]

    assert (
        client.delete(f"{API}/domains/d1/users/alice/tokens/{token_id}", headers=auth(secret)).status_code
        == 204
    )
    revoked = client.get(f"{API}/me", headers=auth(secret))
    assert revoked.status_code == 401 and error_code(revoked) == "Unauthorized"
    assert revoked.headers["www-authenticate"] == "Bearer"


def test_token_secret_is_stored_only_as_a_hash(client: Any, seed: Any) -> None:
    secret = seed.user_token("d1", "alice")
    with seed.session() as session:
        stored = [tuple(str(v) for v in row) for row in session.execute(sa.select(ApiToken.__table__))]
    assert all(secret not in value for row in stored for value in row)


def test_expired_token_is_unauthorized(client: Any, seed: Any) -> None:
    secret = seed.user_token("d1", "alice", expires_in_seconds=3600)
    assert client.get(f"{API}/me", headers=auth(secret)).status_code == 200
    with seed.session() as session:
        session.execute(sa.update(ApiToken).values(expires_at=utcnow() - timedelta(seconds=1)))
        session.commit()
    response = client.get(f"{API}/me", headers=auth(secret))
    assert response.status_code == 401 and "expired" in response.json()["error"]["message"]


def test_token_scopes_limit_the_actions(client: Any, seed: Any) -> None:
    narrow = seed.user_token("d1", "alice", scopes=["DescribeUserProfile"])
    assert client.get(f"{API}/domains/d1/users/alice", headers=auth(narrow)).status_code == 200
    denied = client.post(f"{API}/domains/d1/users/alice/tokens", json={}, headers=auth(narrow))
    assert denied.status_code == 403 and error_code(denied) == "AccessDenied"
    bad_scope = client.post(
        f"{API}/domains/d1/users/alice/tokens",
        json={"scopes": ["Everything"]},
        headers=auth(seed.admin_token),
    )
    assert bad_scope.status_code == 422


@pytest.mark.parametrize("asked", [["*"], ["CreateToken", "DeleteApp"], ["DeleteUserProfile"]])
def test_a_token_cannot_mint_a_token_with_scopes_it_does_not_have(
    client: Any, seed: Any, asked: list[str]
) -> None:
    narrow = seed.user_token("d1", "alice", scopes=["CreateToken"])
    url = f"{API}/domains/d1/users/alice/tokens"
    denied = client.post(url, json={"scopes": asked}, headers=auth(narrow))
    assert denied.status_code == 403 and error_code(denied) == "AccessDenied"
    assert "cannot grant" in denied.json()["error"]["message"]
    listed = client.get(url, headers=auth(seed.admin_token)).json()["items"]
    assert [t["scopes"] for t in listed] == [["CreateToken"]]  # nothing minted


def test_a_narrow_token_mints_at_most_its_own_scopes(client: Any, seed: Any) -> None:
    narrow = seed.user_token("d1", "alice", scopes=["CreateToken", "ListTokens"])
    url = f"{API}/domains/d1/users/alice/tokens"
    same = client.post(url, json={"scopes": ["ListTokens"]}, headers=auth(narrow))
    assert same.status_code == 201 and same.json()["scopes"] == ["ListTokens"]
    defaulted = client.post(url, json={}, headers=auth(narrow))  # scopes left out: the caller's own
    assert defaulted.status_code == 201 and sorted(defaulted.json()["scopes"]) == [
        "CreateToken",
        "ListTokens",
    ]
    minted = defaulted.json()["token"]
    escalate = client.post(url, json={"scopes": ["*"]}, headers=auth(minted))
    assert escalate.status_code == 403


def test_token_last_used_at_is_recorded(client: Any, seed: Any) -> None:
    secret = seed.user_token("d1", "alice")
    client.get(f"{API}/me", headers=auth(secret))
    listed = client.get(f"{API}/domains/d1/users/alice/tokens", headers=auth(secret)).json()
    assert listed["items"][0]["last_used_at"] is not None


def test_audit_records_changes_with_actor_target_and_outcome(client: Any, seed: Any) -> None:
    admin = auth(seed.admin_token)
    client.post(f"{API}/domains", json={"name": "d1"}, headers=admin)
    client.post(f"{API}/domains/d1/users", json={"name": "alice"}, headers=admin)
    user = seed.token("d1", "alice")
    client.post(f"{API}/domains/d1/users", json={"name": "mallory"}, headers=auth(user))  # refused

    events = client.get(f"{API}/audit", params={"domain": "d1"}, headers=admin).json()["items"]
    summary = [(e["actor"], e["action"], e["target"], e["outcome"]) for e in events]
    assert summary == [
        ("d1/alice", "CreateUserProfile", "d1", "denied"),
        ("system/admin", "CreateUserProfile", "d1/alice", "success"),
        ("system/admin", "CreateDomain", "d1", "success"),
    ]
    denied = client.get(f"{API}/audit", params={"outcome": "denied"}, headers=admin).json()["items"]
    assert [e["actor"] for e in denied] == ["d1/alice"]


def test_domain_admin_reads_only_their_domains_audit(client: Any, seed: Any) -> None:
    admin = auth(seed.admin_token)
    for domain in ("d1", "d2"):
        client.post(f"{API}/domains", json={"name": domain}, headers=admin)
        client.post(f"{API}/domains/{domain}/users", json={"name": "boss", "role": "admin"}, headers=admin)
    boss = auth(seed.token("d1", "boss"))
    events = client.get(f"{API}/audit", headers=boss).json()["items"]
    assert events and {e["domain"] for e in events} == {"d1"}
    assert client.get(f"{API}/audit", params={"domain": "d2"}, headers=boss).json()["items"] == []


def test_audit_pages_newest_first(client: Any, seed: Any) -> None:
    admin = auth(seed.admin_token)
    for i in range(5):
        client.post(f"{API}/domains", json={"name": f"d{i}"}, headers=admin)
    first = client.get(f"{API}/audit", params={"limit": 3, "action": "CreateDomain"}, headers=admin).json()
    second = client.get(
        f"{API}/audit",
        params={"limit": 3, "action": "CreateDomain", "next_token": first["next_token"]},
        headers=admin,
    ).json()
    targets = [e["target"] for e in first["items"] + second["items"]]
    assert targets == ["d4", "d3", "d2", "d1", "d0"] and second["next_token"] is None


def test_openapi_describes_the_api(client: Any) -> None:
    spec = client.get(f"{API}/openapi.json").json()
    assert {
        "/api/v1/domains",
        "/api/v1/domains/{domain}/users/{user}/tokens",
        "/api/v1/me",
        "/api/v1/audit",
    } <= set(spec["paths"])


def test_openapi_declares_every_path_parameter_of_every_operation(client: Any) -> None:
    """Found by schemathesis: ``{domain}``/``{user}`` were read by ``allow`` and never declared."""
    spec = client.get(f"{API}/openapi.json").json()
    undeclared = []
    for path, operations in spec["paths"].items():
        in_path = set(re.findall(r"{([^}:]+)", path))
        for method, operation in operations.items():
            declared = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
            if sorted(declared) != sorted(in_path):
                undeclared.append(f"{method.upper()} {path}: declares {declared}")
    assert not undeclared, "\n".join(undeclared)


def test_openapi_documents_the_errors_and_the_real_constraints(client: Any, hub_settings: Any) -> None:
    spec = client.get(f"{API}/openapi.json").json()
    users = spec["paths"]["/api/v1/domains/{domain}/users"]
    assert {"400", "401", "403", "404", "422", "429", "503"} <= set(users["get"]["responses"])
    assert {"409", "413", "415"} <= set(users["post"]["responses"])
    error = {"$ref": "#/components/schemas/Error"}
    assert users["post"]["responses"]["422"]["content"]["application/json"]["schema"] == error
    assert "HTTPValidationError" not in json.dumps(spec)
    limit = next(p for p in users["get"]["parameters"] if p["name"] == "limit")["schema"]
    assert limit == limit | {"type": "integer", "minimum": 1, "maximum": hub_settings.max_page_size,
                             "default": hub_settings.default_page_size}  # fmt: skip
    queries = [p for ops in spec["paths"].values() for op in ops.values() for p in op.get("parameters", [])
               if p["in"] == "query"]  # fmt: skip
    assert queries and not [p["name"] for p in queries if "anyOf" in p["schema"]]
    health = spec["paths"]["/api/v1/healthz"]["get"]["responses"]
    assert set(health) == {"200", "503"}


def test_readyz_checks_the_database_and_redis_when_configured(hub_settings: Any, redis_url: str) -> None:
    import redis as redis_client
    from fastapi.testclient import TestClient

    from profilerhub_core.tasks import worker_heartbeat_prefix
    from profilerhub_hub.main import create_app

    queue = f"readyz-{uuid.uuid4().hex[:8]}"
    beat = redis_client.Redis.from_url(redis_url)
    settings = hub_settings.model_copy(update={"celery_queue": queue})
    try:
        for redis, worker, expected in (
            (redis_url, False, 503),  # the broker answers but no worker takes its tasks
            (redis_url, True, 200),
            ("redis://127.0.0.1:1/0", True, 503),
        ):
            if worker:
                beat.set(worker_heartbeat_prefix(queue) + "w1", "1", ex=60)
            app = create_app(settings.model_copy(update={"redis_url": redis}))
            with TestClient(app) as test_client:
                response = test_client.get(f"{API}/readyz")
                assert response.status_code == expected, response.json()
                checks = response.json()["checks"]
                assert checks["database"] == "ok"
                assert (checks["workers"] == "ok") is (expected == 200), checks
            app.state.services.engine.dispose()
    finally:
        beat.delete(worker_heartbeat_prefix(queue) + "w1")
        beat.close()
    app = create_app(hub_settings)
    assert TestClient(app).get("/healthz").json()["status"] == "ok"
    app.state.services.engine.dispose()


def test_a_domain_sets_its_apps_resources_as_kubernetes_quantities(client: Any, seed: Any) -> None:
    admin = auth(seed.admin_token)
    sizes = {"app_cpu_request": "500m", "app_cpu_limit": "2", "app_memory_limit": "4Gi"}
    made = client.post(f"{API}/domains", json={"name": "big", "settings": sizes}, headers=admin)
    assert made.status_code == 201, made.text
    assert {k: made.json()["settings"][k] for k in sizes} == sizes
    assert made.json()["settings"]["app_memory_request"] == ""  # unset: the worker's default
    for bad in ({"app_cpu_limit": "two"}, {"app_memory_limit": "4 GB"}, {"app_cpu_request": 1}):
        refused = client.patch(f"{API}/domains/big", json={"settings": bad}, headers=admin)
        assert refused.status_code == 422, bad  # the request's own validation
    above = client.patch(f"{API}/domains/big", json={"settings": {"app_cpu_request": "3"}}, headers=admin)
    assert above.status_code == 400
    assert "app_cpu_request (3) is more than app_cpu_limit (2)" in above.json()["error"]["message"]
    assert client.get(f"{API}/domains/big", headers=admin).json()["settings"]["app_cpu_request"] == "500m"
    cleared = client.patch(f"{API}/domains/big", json={"settings": {"app_cpu_limit": ""}}, headers=admin)
    assert cleared.status_code == 200 and cleared.json()["settings"]["app_cpu_limit"] == ""
