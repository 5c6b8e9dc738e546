"""The in-process hub answers with the admin token the first start created."""

from __future__ import annotations

from typing import Any

from profilerhub_hub.services import HubServices
from tests.support.hub import auth


def test_admin_token_from_first_start_identifies_the_platform_admin(client: Any, seed: Any) -> None:
    response = client.get("/api/v1/me", headers=auth(seed.admin_token))
    assert response.status_code == 200
    assert response.json() | {"token_id": None} == {
        "user": "admin",
        "domain": "system",
        "role": "admin",
        "is_platform_admin": True,
        "token_id": None,
        "scopes": ["*"],
        "impersonated_by": None,
        "session": False,
    }


def test_seeded_user_token_reads_its_own_profile(client: Any, seed: Any) -> None:
    token = seed.user_token("d1", "alice")
    response = client.get("/api/v1/domains/d1/users/alice", headers=auth(token))
    assert response.status_code == 200
    assert response.json()["name"] == "alice"


def test_the_hub_is_wired_from_one_services_object_and_nothing_else_on_app_state(
    client: Any, seed: Any, hub_app: Any
) -> None:
    token = seed.user_token("d1", "alice")
    for path in ("/api/v1/me", "/api/v1/domains/d1/users/alice/jobs", "/healthz", "/console/"):
        client.get(path, headers=auth(token))  # routes, deps, the console and the store all used
    assert set(vars(hub_app.state)["_state"]) == {"services"}
    assert isinstance(hub_app.state.services, HubServices)
