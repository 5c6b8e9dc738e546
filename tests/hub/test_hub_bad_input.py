"""Bad input gets a 4xx in the one error shape and changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from profilerhub_core.db.models import Base
from tests.support.hub import auth

API = "/api/v1"


def snapshot(seed: Any) -> dict[str, int]:
    """Row count of every table: equal before and after means nothing changed."""
    with seed.session() as session:
        return {
            t.name: session.scalar(sa.select(sa.func.count()).select_from(t))
            for t in Base.metadata.sorted_tables
        }


def assert_error(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["error"] and body["error"]["code"] == code and body["error"]["message"], body


@pytest.fixture
def ready(client: Any, seed: Any) -> dict[str, str]:
    seed.user("d1", "alice")
    return auth(seed.admin_token)


BAD_BODIES = [
    pytest.param("/domains", {"name": "../x"}, id="domain-dotdot"),
    pytest.param("/domains", {"name": "a/b"}, id="domain-slash"),
    pytest.param("/domains", {"name": "x" * 64}, id="domain-64-chars"),
    pytest.param("/domains", {"name": "-x"}, id="domain-leading-dash"),
    pytest.param("/domains", {"name": "x-"}, id="domain-trailing-dash"),
    pytest.param("/domains", {"name": "a b"}, id="domain-space"),
    pytest.param("/domains", {"name": ""}, id="domain-empty"),
    pytest.param("/domains", {"name": "ä"}, id="domain-non-ascii"),
    pytest.param("/domains", {"name": 12}, id="domain-name-number"),
    pytest.param("/domains", {"name": None}, id="domain-name-null"),
    pytest.param("/domains", {}, id="domain-name-missing"),
    pytest.param("/domains", {"name": "ok", "owner": "me"}, id="domain-unknown-field"),
    pytest.param("/domains", {"name": "ok", "settings": {"idle_minutes": "soon"}}, id="settings-wrong-type"),
    pytest.param("/domains", {"name": "ok", "settings": {"idle_minutes": -1}}, id="settings-negative"),
    pytest.param("/domains", {"name": "ok", "settings": {"colour": "red"}}, id="settings-unknown-key"),
    pytest.param("/domains", {"name": "ok", "settings": {"idle_minutes": "10"}}, id="settings-text-number"),
    pytest.param("/domains", {"name": "ok", "settings": {"max_live_apps": True}}, id="settings-bool-num"),
    pytest.param("/domains", {"name": "x", "settings": {"users_manage_own_apps": 1}}, id="settings-num-bool"),
    pytest.param("/domains", ["name", "ok"], id="body-is-a-list"),
    pytest.param("/domains/d1/users", {"name": "../../etc"}, id="user-dotdot"),
    pytest.param("/domains/d1/users", {"name": "bob", "role": "root"}, id="user-bad-role"),
    pytest.param(
        "/domains/d1/users", {"name": "bob", "role": "user", "admin": True}, id="user-unknown-field"
    ),
    pytest.param("/domains/d1/users/alice/tokens", {"expires_in_seconds": "forever"}, id="token-expiry-type"),
    pytest.param("/domains/d1/users/alice/tokens", {"expires_in_seconds": 1}, id="token-expiry-too-short"),
    pytest.param("/domains/d1/users/alice/tokens", {"note": "n" * 201}, id="token-note-too-long"),
    pytest.param("/domains/d1/users/alice/tokens", {"scopes": []}, id="token-no-scopes"),
    pytest.param("/domains/d1/users/alice/tokens", {"secret": "mine"}, id="token-unknown-field"),
]


@pytest.mark.parametrize(("path", "body"), BAD_BODIES)
def test_invalid_body_is_422_and_changes_nothing(
    client: Any, seed: Any, ready: dict[str, str], path: str, body: Any
) -> None:
    before = snapshot(seed)
    assert_error(client.post(f"{API}{path}", json=body, headers=ready), 422, "ValidationError")
    assert snapshot(seed) == before


def test_invalid_patch_is_422_and_changes_nothing(client: Any, seed: Any, ready: dict[str, str]) -> None:
    before = client.get(f"{API}/domains/d1", headers=ready).json()
    for body in ({"settings": {"max_live_apps": "many"}}, {"settings": {"users_manage_own_apps": "yes"}}, {}):
        assert_error(client.patch(f"{API}/domains/d1", json=body, headers=ready), 422, "ValidationError")
    assert client.get(f"{API}/domains/d1", headers=ready).json() == before


@pytest.mark.parametrize("raw", [b"{", b'{"name": "x",}', b"\xff\xfe", b'{"name": "x"} trailing'])
def test_malformed_json_is_400_and_changes_nothing(
    client: Any, seed: Any, ready: dict[str, str], raw: bytes
) -> None:
    before = snapshot(seed)
    response = client.post(
        f"{API}/domains", content=raw, headers=ready | {"Content-Type": "application/json"}
    )
    assert response.status_code in (400, 422)
    assert_error(response, response.status_code, "ValidationError")
    assert snapshot(seed) == before


def test_huge_body_is_413_and_changes_nothing(client: Any, seed: Any, ready: dict[str, str]) -> None:
    before = snapshot(seed)
    huge = b'{"name": "x", "pad": "' + b"a" * (2 * 1024 * 1024) + b'"}'
    response = client.post(
        f"{API}/domains", content=huge, headers=ready | {"Content-Type": "application/json"}
    )
    assert_error(response, 413, "PayloadTooLarge")

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit applies while reading
        yield b'{"name": "x", "pad": "'
        for _ in range(40):
            yield b"a" * 65536
        yield b'"}'

    response = client.post(
        f"{API}/domains", content=chunks(), headers=ready | {"Content-Type": "application/json"}
    )
    assert_error(response, 413, "PayloadTooLarge")
    assert snapshot(seed) == before


@pytest.mark.parametrize(
    "path",
    [
        "GET /domains/..%2Fsystem",
        "GET /domains/d1/users/..%2F..%2Fsystem",
        "GET /domains/%00",
        "GET /domains/d1/users/a%2Fb",
        "DELETE /domains/d1/users/alice/tokens/%00",
        "DELETE /domains/d1/users/alice/tokens/..%2F..",
    ],
)
def test_path_like_names_in_urls_find_nothing(
    client: Any, seed: Any, ready: dict[str, str], path: str
) -> None:
    before = snapshot(seed)
    method, url = path.split(" ")
    assert_error(client.request(method, f"{API}{url}", headers=ready), 404, "ResourceNotFound")
    assert snapshot(seed) == before


@pytest.mark.parametrize(
    "header",
    [
        "Bearer phk_forged0000000000000000000000000000000000",
        "Bearer ",
        "Basic YWRtaW46YWRtaW4=",
        "phk_x",
        "Bearer a b",
    ],
)
def test_forged_or_malformed_credentials_are_401(
    client: Any, seed: Any, ready: dict[str, str], header: str
) -> None:
    before = snapshot(seed)
    response = client.post(f"{API}/domains", json={"name": "x"}, headers={"Authorization": header})
    assert_error(response, 401, "Unauthorized")
    assert snapshot(seed) == before


@pytest.mark.parametrize("query", ["limit=abc", "limit=0", "limit=-5", "next_token=" + "x" * 3000])
def test_bad_list_parameters_are_refused(client: Any, ready: dict[str, str], query: str) -> None:
    response = client.get(f"{API}/domains?{query}", headers=ready)
    assert_error(response, 422, "ValidationError")


def test_bad_audit_filters_are_refused(client: Any, ready: dict[str, str]) -> None:
    assert_error(client.get(f"{API}/audit?since=yesterday", headers=ready), 422, "ValidationError")
    assert_error(client.get(f"{API}/audit?actor=%00", headers=ready), 422, "ValidationError")
    for naive in ("since=2026-01-01T00:00:00", "until=2026-01-01"):  # no time zone: which day is it?
        assert_error(client.get(f"{API}/audit?{naive}", headers=ready), 422, "ValidationError")
    assert client.get(f"{API}/audit?since=2026-01-01T00:00:00Z", headers=ready).status_code == 200


def test_unknown_route_and_method_use_the_error_shape(client: Any, ready: dict[str, str]) -> None:
    assert_error(client.get(f"{API}/nothing-here", headers=ready), 404, "ResourceNotFound")
    assert_error(client.put(f"{API}/domains/d1", json={}, headers=ready), 405, "MethodNotAllowed")


def test_a_form_encoded_body_is_told_to_send_json_and_changes_nothing(client: Any, seed: Any) -> None:
    """``curl -d`` without ``-H 'Content-Type: application/json'`` is the commonest first mistake."""
    headers = {
        "Authorization": f"Bearer {seed.admin_token}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    answer = client.post("/api/v1/domains", content=b'{"name": "formdomain"}', headers=headers)
    assert answer.status_code == 415
    assert answer.json()["error"]["code"] == "UnsupportedMediaType"
    assert "Content-Type: application/json" in answer.json()["error"]["message"]
    listed = client.get("/api/v1/domains", headers={"Authorization": f"Bearer {seed.admin_token}"}).json()
    assert "formdomain" not in [d["name"] for d in listed["items"]]
