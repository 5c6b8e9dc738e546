"""The hub's proxy to apps: presigned URLs, session cookies, CSRF, methods, activity."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from profilerhub_core.db.models import App
from profilerhub_hub.proxy import SESSION_COOKIE
from profilerhub_worker import lifecycle
from tests.support.apps import ONE, create
from tests.support.hub import auth

pytestmark = pytest.mark.parametrize("hub_db_url", ["sqlite"], indirect=True)


@pytest.fixture
def apps_settings(apps_settings: Any) -> Any:
    """Apps that also answer ``/api/echo`` (tests.support.echo_app): what any method and body
    look like once they have passed the proxy."""
    return apps_settings.model_copy(update={"spawner": "tests.support.echo_app:EchoAppSpawner"})


def presign(client: Any, token: str, user: str = "alice") -> Any:
    return client.post(
        ONE.format(domain="d1", user=user, name="default") + "/presigned-url", headers=auth(token)
    )


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def test_presigned_url_sets_a_path_scoped_httponly_cookie_once(
    apps_client: Any, alice: str, running: str
) -> None:
    answer = presign(apps_client, alice)
    assert answer.status_code == 200, answer.text
    login = apps_client.get(path_of(answer.json()["url"]), follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"] == f"/apps/{running}/"
    cookie = login.headers["set-cookie"]
    assert f"Path=/apps/{running}/" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie
    page = apps_client.get(f"/apps/{running}/")  # the cookie jar sends it on this path only
    assert page.status_code == 200 and "alice's profiler" in page.text
    reused = apps_client.get(path_of(answer.json()["url"]), follow_redirects=False)
    assert reused.status_code == 401 and "already used" in reused.json()["error"]["message"]


def test_tampered_presigned_url_or_cookie_opens_nothing(apps_client: Any, alice: str, running: str) -> None:
    url = path_of(presign(apps_client, alice).json()["url"])
    assert apps_client.get(url[:-3] + "abc", follow_redirects=False).status_code == 401
    apps_client.cookies.set(SESSION_COOKIE, "forged.value", path=f"/apps/{running}/")
    assert apps_client.get(f"/apps/{running}/").status_code == 401


def test_session_cookie_of_one_app_does_not_open_another(
    apps_client: Any, seed: Any, alice: str, running: str, worker_ctx: Any
) -> None:
    bob = seed.user_token("d1", "bob")
    bobs = create(apps_client, bob, user="bob").json()["app_id"]
    lifecycle.spawn(worker_ctx, bobs)
    login = apps_client.get(path_of(presign(apps_client, alice).json()["url"]), follow_redirects=False)
    value = login.cookies[SESSION_COOKIE]
    apps_client.cookies.clear()
    apps_client.cookies.set(SESSION_COOKIE, value, path=f"/apps/{bobs}/")
    answer = apps_client.get(f"/apps/{bobs}/")
    assert answer.status_code == 404 and "bob" not in answer.text


def test_cookie_requests_that_change_state_need_the_hubs_origin(
    apps_client: Any, alice: str, running: str
) -> None:
    apps_client.get(path_of(presign(apps_client, alice).json()["url"]))
    echo = f"/apps/{running}/api/echo"
    refused = apps_client.post(echo, content=b"x")
    assert refused.status_code == 403 and "Cross-site" in refused.json()["error"]["message"]
    assert apps_client.post(echo, content=b"x", headers={"origin": "http://evil.example"}).status_code == 403
    # The request's own Host is no proof: an attacker's DNS name can point at the hub.
    host = apps_client.post(echo, content=b"x", headers={"origin": "http://testserver"})
    assert host.status_code == 403
    public = apps_client.app.state.services.settings.public_url
    same = apps_client.post(echo, content=b"xyz", headers={"origin": public})
    assert same.status_code == 200 and same.json()["size"] == 3
    # With an API token in the header there is no ambient credential, so no CSRF check.
    assert apps_client.post(echo, content=b"x", headers=auth(alice)).status_code == 200


def test_any_method_body_and_query_pass_through(apps_client: Any, alice: str, running: str) -> None:
    body = b"0123456789" * 100_000  # 1 MB, more than the API's JSON body limit
    answer = apps_client.patch(f"/apps/{running}/api/echo?a=1&b=two", content=body, headers=auth(alice))
    assert answer.json() == {"method": "PATCH", "size": len(body), "query": "a=1&b=two"}
    assert apps_client.delete(f"/apps/{running}/api/echo", headers=auth(alice)).json()["method"] == "DELETE"
    missing = apps_client.get(f"/apps/{running}/no/such/page", headers=auth(alice))
    assert missing.status_code == 404  # the app's own answer, passed through


@pytest.mark.parametrize("odd", ["x%01y", "a%00b", "%2e%2e/%2e%2e/etc", "caf%C3%A9", "%ZZ", "a%2Fb"])
def test_odd_escapes_in_a_proxied_path_reach_the_app_as_sent(
    apps_client: Any, alice: str, running: str, odd: str
) -> None:
    answer = apps_client.get(f"/apps/{running}/api/{odd}", headers=auth(alice))
    assert answer.status_code in (400, 404), answer.text
    assert set(answer.json()) == {"error"} and "Traceback" not in answer.text


def test_proxy_traffic_updates_last_activity(apps_client: Any, seed: Any, alice: str, running: str) -> None:
    with seed.session() as session:
        before = session.get(App, running).last_activity_at
    apps_client.get(f"/apps/{running}/", headers=auth(alice))
    with seed.session() as session:
        after = session.get(App, running).last_activity_at
    assert before is not None and after is not None and after > before


def test_unknown_app_and_no_credentials(apps_client: Any, alice: str) -> None:
    assert (
        apps_client.get("/apps/00000000-0000-0000-0000-000000000000/", headers=auth(alice)).status_code == 404
    )
    assert apps_client.get("/apps/whatever/").status_code == 401


def test_revoking_the_token_that_made_a_presigned_url_ends_the_app_session(
    apps_client: Any, alice: str, running: str
) -> None:
    apps_client.get(path_of(presign(apps_client, alice).json()["url"]))
    assert apps_client.get(f"/apps/{running}/").status_code == 200
    tokens = "/api/v1/domains/d1/users/alice/tokens"
    (token,) = apps_client.get(tokens, headers=auth(alice)).json()["items"]
    assert apps_client.delete(f"{tokens}/{token['token_id']}", headers=auth(alice)).status_code == 204
    ended = apps_client.get(f"/apps/{running}/")
    assert ended.status_code == 401 and "has ended" in ended.json()["error"]["message"]
