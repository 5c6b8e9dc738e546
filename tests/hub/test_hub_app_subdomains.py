"""Apps on origins of their own (``PROFILERHUB_APP_SUBDOMAIN_HOST``): what each host serves.

The hub answers as ``http://testserver``; apps are served at ``http://<app id>.apps.testserver``.
The test client keeps cookies per host as a browser does, so a cookie set by one host is never
sent to another.
"""

from __future__ import annotations

from typing import Any

import pytest

from profilerhub_hub.proxy import SESSION_COOKIE
from profilerhub_worker import lifecycle
from tests.support.apps import ONE, create
from tests.support.hub import auth

pytestmark = pytest.mark.parametrize("hub_db_url", ["sqlite"], indirect=True)

APPS_HOST = "http://apps.testserver"


@pytest.fixture
def apps_settings(apps_settings: Any) -> Any:
    return apps_settings.model_copy(
        update={
            "spawner": "tests.support.echo_app:EchoAppSpawner",  # answers /api/echo
            "public_url": "http://testserver",
            "app_subdomain_host": APPS_HOST,
        }
    )


def origin(app_id: str) -> str:
    return f"http://{app_id}.apps.testserver"


def presign(client: Any, token: str, user: str = "alice") -> str:
    answer = client.post(
        ONE.format(domain="d1", user=user, name="default") + "/presigned-url", headers=auth(token)
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["url"])


def sign_in(client: Any, token: str, app_id: str) -> None:
    login = client.get(presign(client, token), follow_redirects=False)
    assert login.status_code == 303, login.text
    assert login.headers["location"] == f"/apps/{app_id}/"


def test_a_presigned_url_opens_the_app_on_its_own_origin_with_a_host_only_cookie(
    apps_client: Any, alice: str, running: str
) -> None:
    url = presign(apps_client, alice)
    assert url.startswith(f"{origin(running)}/apps/{running}/_hub/login?token=")
    login = apps_client.get(url, follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"] == f"/apps/{running}/"
    cookie = login.headers["set-cookie"]
    assert "Domain" not in cookie and f"Path=/apps/{running}/" in cookie and "HttpOnly" in cookie
    page = apps_client.get(f"{origin(running)}/apps/{running}/")
    assert page.status_code == 200 and "alice's profiler" in page.text
    # The hub's host has no app cookie and serves no app page to a browser: it sends it to the app's host.
    moved = apps_client.get(f"/apps/{running}/jobs?tab=2", follow_redirects=False)
    assert moved.status_code == 308
    assert moved.headers["location"] == f"{origin(running)}/apps/{running}/jobs?tab=2"


def test_an_apps_host_serves_that_app_and_nothing_of_the_hub(
    apps_client: Any, seed: Any, alice: str, running: str, worker_ctx: Any
) -> None:
    bob = seed.user_token("d1", "bob")
    bobs = create(apps_client, bob, user="bob").json()["app_id"]
    lifecycle.spawn(worker_ctx, bobs)
    sign_in(apps_client, alice, running)
    host = origin(running)
    for path in ("/console/", "/api/v1/domains", "/", f"/apps/{bobs}/", "/healthz"):
        answer = apps_client.get(host + path, headers=auth(alice), follow_redirects=False)
        assert answer.status_code == 404, path
        assert "serves the app" in answer.json()["error"]["message"]
    nested = apps_client.get(f"http://x.{running}.apps.testserver/apps/{running}/", follow_redirects=False)
    assert nested.status_code == 404
    # Alice's cookie, carried to Bob's host by hand, opens nothing there.
    value = apps_client.cookies.get(SESSION_COOKIE, domain=f"{running}.apps.testserver")
    apps_client.cookies.clear()
    apps_client.cookies.set(SESSION_COOKIE, value, domain=f"{bobs}.apps.testserver", path=f"/apps/{bobs}/")
    answer = apps_client.get(f"{origin(bobs)}/apps/{bobs}/")
    assert answer.status_code == 404 and "bob" not in answer.text


def test_on_the_hubs_host_scripts_with_a_token_still_reach_apps_and_browsers_are_sent_away(
    apps_client: Any, alice: str, running: str
) -> None:
    echo = f"/apps/{running}/api/echo"
    assert apps_client.post(echo, content=b"xyz", headers=auth(alice)).json()["size"] == 3
    refused = apps_client.post(echo, content=b"x")
    assert refused.status_code == 404 and origin(running) in refused.json()["error"]["message"]
    # Whatever sits where an app id goes is never made into a host to redirect to.
    for odd in ("evil.example%23", "evil.example%2F", "EVIL", "a@b"):
        answer = apps_client.get(f"/apps/{odd}/", follow_redirects=False)
        assert answer.status_code == 404 and "location" not in answer.headers, odd
    assert apps_client.get("/api/v1/healthz").status_code == 200  # the hub itself is untouched


def test_cookie_requests_that_change_state_must_come_from_the_apps_own_origin(
    apps_client: Any, alice: str, running: str
) -> None:
    sign_in(apps_client, alice, running)
    echo = f"{origin(running)}/apps/{running}/api/echo"
    for source in (None, "http://testserver", f"http://{running}.apps.testserver.evil.example", "null"):
        headers = {"origin": source} if source else {}
        answer = apps_client.post(echo, content=b"x", headers=headers)
        assert answer.status_code == 403 and "Cross-site" in answer.json()["error"]["message"], source
    same = apps_client.post(echo, content=b"xyz", headers={"origin": origin(running)})
    assert same.status_code == 200 and same.json()["size"] == 3


def test_a_console_sign_in_landing_in_the_app_is_handed_on_to_the_apps_origin_once(
    apps_client: Any, alice: str, running: str
) -> None:
    link = apps_client.post(
        "/api/v1/domains/d1/users/alice/presigned-url", json={"landing": "app"}, headers=auth(alice)
    )
    assert link.status_code == 200, link.text
    redeemed = apps_client.get(link.json()["url"], follow_redirects=False)
    assert redeemed.status_code == 303
    handoff = redeemed.headers["location"]
    assert handoff.startswith(f"{origin(running)}/apps/{running}/_hub/login?token=")
    assert "profilerhub_session" not in redeemed.headers.get("set-cookie", "")  # never on the hub's host
    landed = apps_client.get(handoff, follow_redirects=True)
    assert landed.status_code == 200 and "alice's profiler" in landed.text
    assert str(landed.url) == f"{origin(running)}/apps/{running}/"
    again = apps_client.get(handoff, follow_redirects=False)
    assert again.status_code == 401 and "already used" in again.json()["error"]["message"]
    # The app's session is the link's token's: revoking that token ends it, on the app's host too.
    tokens = "/api/v1/domains/d1/users/alice/tokens"
    (token,) = apps_client.get(tokens, headers=auth(alice)).json()["items"]
    assert apps_client.delete(f"{tokens}/{token['token_id']}", headers=auth(alice)).status_code == 204
    assert apps_client.get(f"{origin(running)}/apps/{running}/").status_code == 401
