"""The profiler app process: every request but health needs the hub's token for this app."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from profilerhub_app.services import AppServices
from profilerhub_app.settings import AppServiceSettings
from profilerhub_core.apptokens import generate_signing_key, issue_app_token, public_key_pem
from tests.support.echo_app import create_echo_app

pytestmark = pytest.mark.anyio

APP_ID = "3c1d1a52-1111-4222-8333-444455556666"


@pytest.fixture(scope="module")
def key():
    return generate_signing_key()


@pytest.fixture
def client(key):
    settings = AppServiceSettings.from_env(
        {
            "PROFILERHUB_APP_ID": APP_ID,
            "PROFILERHUB_APP_OWNER": "bob",
            "PROFILERHUB_APP_OWNER_ID": "user-bob",
            "PROFILERHUB_APP_DOMAIN": "vision",
            "PROFILERHUB_APP_PUBLIC_KEY": public_key_pem(key),
        }
    )
    transport = httpx.ASGITransport(app=create_echo_app(settings))
    return httpx.AsyncClient(transport=transport, base_url="http://app")


@pytest.mark.parametrize(
    "path", [f"/apps/{APP_ID}/", f"/apps/{APP_ID}/api/whoami", "/", "/apps/other/", "/docs"]
)
async def test_every_path_without_token_answers_401_only(client: httpx.AsyncClient, path: str) -> None:
    answer = await client.get(path)
    assert answer.status_code == 401
    assert "bob" not in answer.text


async def test_health_needs_no_token(client: httpx.AsyncClient) -> None:
    assert (await client.get(f"/apps/{APP_ID}/health")).json() == {"status": "ok"}


async def test_owner_token_for_another_app_is_refused(client: httpx.AsyncClient, key) -> None:
    token = issue_app_token(key, "another-app", "user-bob")
    answer = await client.get(f"/apps/{APP_ID}/", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 401


async def test_any_method_and_body_reach_the_app_with_a_token(client: httpx.AsyncClient, key) -> None:
    headers = {"Authorization": f"Bearer {issue_app_token(key, APP_ID, 'user-bob')}"}
    answer = await client.put(f"/apps/{APP_ID}/api/echo?x=1", content=b"abc", headers=headers)
    assert answer.json() == {"method": "PUT", "size": 3, "query": "x=1"}
    missing = await client.get(f"/apps/{APP_ID}/nothing-here", headers=headers)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "ResourceNotFound"


def test_missing_settings_are_named() -> None:
    from profilerhub_app.settings import MissingSetting

    with pytest.raises(MissingSetting) as raised:
        AppServiceSettings.from_env({"PROFILERHUB_APP_ID": "x", "PROFILERHUB_APP_PORT": "8000"})
    assert raised.value.names == [
        "PROFILERHUB_APP_OWNER",
        "PROFILERHUB_APP_OWNER_ID",
        "PROFILERHUB_APP_PUBLIC_KEY",
    ]


def test_the_app_is_wired_from_one_services_object_and_nothing_else_on_app_state(app_client: Any) -> None:
    for path in ("api/jobs", "api/whoami", "api/jobs/nope/dashboard", ""):
        app_client.get(path)
    app = app_client.app
    assert set(vars(app.state)["_state"]) == {"services"}
    assert isinstance(app.state.services, AppServices)
