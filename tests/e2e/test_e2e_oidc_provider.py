"""OpenID sign-in against a provider nobody here wrote: panva's certified ``oidc-provider`` (npm,
pinned in tests/support/oidc/package-lock.json) on node, its own login and consent pages, and a
real ``profilerhub hub`` process, in Chromium.

What a real provider does that the project's own test provider did not: the ID token of a code
flow carries ``sub`` alone (the profile's claims come from the userinfo endpoint), the client
secret is form-encoded before HTTP Basic (RFC 6749 §2.3.1), PKCE is required, the authorization
response names its issuer (RFC 9207), and keys rotate. Skipped, saying why, without node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import pytest
import testservices

from tests.e2e.pages_stack import BrowserLog, launch_browser, shot
from tests.support.hub import RunningHub, auth, migrate, start_profilerhub
from tests.support.oidc_node import NodeOpenIDProvider, installed_modules

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ADMIN = "oidc-node-admin-token-0123456789abcdef"
CLIENT_ID = "profilerhub"
# Characters HTTP Basic must form-encode (RFC 6749 §2.3.1), as some providers' generated secrets hold.
CLIENT_SECRET = "s3cret+with/odd=chars%and~more"
ACCOUNTS = {
    "alice": {"preferred_username": "alice", "name": "Alice Liddell", "email": "alice@example.org"},
    "bob": {"preferred_username": "bob", "name": "Bob", "email": "bob@example.org"},
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeOpenIDProvider, RunningHub]]:
    """The provider (its one client registered for the hub's callback), then the hub on it."""
    installed_modules()  # skips the module, saying why, where node or the registry is missing
    tmp = tmp_path_factory.mktemp("oidc-node")
    port = testservices.free_port()
    hub_url = f"http://127.0.0.1:{port}"
    client = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
              "redirect_uris": [f"{hub_url}/console/oidc/callback"]}  # fmt: skip
    provider = NodeOpenIDProvider.start(tmp / "provider", client=client, accounts=ACCOUNTS)
    database = f"sqlite:///{tmp}/hub.db"
    migrate(database, tmp)
    env = {
        "PROFILERHUB_ADMIN_TOKEN": ADMIN,
        "PROFILERHUB_HUB_WORKERS": "1",
        "PROFILERHUB_OIDC_ISSUER": provider.issuer,
        "PROFILERHUB_OIDC_CLIENT_ID": CLIENT_ID,
        "PROFILERHUB_OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "PROFILERHUB_OIDC_PROVIDER_NAME": "oidc-provider",
        "PROFILERHUB_OIDC_DEFAULT_DOMAIN": "ml",
    }
    try:
        hub = start_profilerhub("hub", home=tmp / "home", log=tmp / "hub.log", database_url=database,
                                env=env, port=port)  # fmt: skip
    except BaseException:
        provider.stop()
        raise
    yield provider, hub
    hub.stop()
    provider.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch_browser()


def api(hub: RunningHub) -> httpx.Client:
    return httpx.Client(base_url=f"{hub.url}/api/v1", headers=auth(ADMIN), timeout=30)


def new_page(browser: Any, log: BrowserLog | None = None) -> tuple[Any, Any]:
    """A fresh browser context and page. The provider's own pages ask Google for a font: answered
    empty here, as the machine may have no way out."""
    context = browser.new_context()
    context.route("https://fonts.googleapis.com/**", lambda r: r.fulfill(content_type="text/css", body=""))
    page = context.new_page()
    if log is not None:
        log.watch(page)
    return context, page


def to_provider(browser: Any, hub: RunningHub, log: BrowserLog) -> tuple[Any, Any]:
    """A fresh browser on the hub's sign-in page, sent on to the provider's login form."""
    context, page = new_page(browser, log)
    page.goto(f"{hub.url}/console/")
    page.click("#sign-in-oidc:has-text('Sign in with oidc-provider')")
    page.wait_for_selector("input[name=login]")
    return context, page


def provider_sign_in(page: Any, login: str) -> None:
    """The provider's own pages: its login form (any password), then its consent form."""
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "whatever-the-provider-accepts")
    page.click("button:has-text('Sign-in')")
    page.click("button:has-text('Continue')")  # consent: the hub asks for openid profile email


def wait_for_console(page: Any, hub: RunningHub) -> None:
    """The browser lands on the console; else fail with where it is and what it says."""
    try:
        page.wait_for_url(f"{hub.url}/console/", timeout=30_000)
    except Exception:
        pytest.fail(f"not on the console but at {page.url}: {page.content()[-3000:]}")
    page.wait_for_selector("#main h1")


def signed_in_as(page: Any) -> str:
    return str(page.evaluate("fetch('/api/v1/me').then(r => r.json()).then(m => m.user)"))


def console_cookies(context: Any) -> list[Any]:
    return [c for c in context.cookies() if c["name"] == "profilerhub_console"]


def test_sign_in_through_panvas_oidc_provider_in_chromium(
    stack: tuple[NodeOpenIDProvider, RunningHub], browser: Any
) -> None:
    provider, hub = stack
    log = BrowserLog()
    with api(hub) as admin:
        assert admin.post("/domains", json={"name": "ml"}).status_code == 201
        assert admin.post("/domains/ml/users", json={"name": "alice"}).status_code == 201

    # -- the whole authorization-code flow, PKCE included, ends signed in as the provider's user --
    context, page = to_provider(browser, hub, log)
    provider_sign_in(page, "alice")
    wait_for_console(page, hub)
    assert "alice" in page.locator("header").inner_text()
    assert signed_in_as(page) == "alice"
    shot(page, "oidc-node-01-signed-in")
    context.close()

    # -- refused: a tampered state; nothing is created, no session ----------------------------------
    with api(hub) as admin:
        made = admin.patch("/domains/ml", json={"settings": {"create_users_on_sign_in": True}})
        assert made.status_code == 200, made.text
    # The hub's redirect to the provider, its state changed on the way (the flow's cookie kept).
    context, page = new_page(browser)  # not watched: its 401 is the point
    started = page.request.get(f"{hub.url}/console/oidc/sign-in", max_redirects=0)
    assert started.status == 303
    where = urlsplit(started.headers["location"])
    asked = dict(parse_qsl(where.query))
    assert asked["code_challenge_method"] == "S256" and asked["nonce"] and asked["state"]
    page.goto(where._replace(query=urlencode({**asked, "state": "attacker-chosen-state"})).geturl())
    page.wait_for_selector("input[name=login]")
    with page.expect_response(lambda r: r.url.startswith(f"{hub.url}/console/oidc/callback")) as callback:
        provider_sign_in(page, "bob")
    assert callback.value.status == 401
    query = dict(parse_qsl(urlsplit(page.url).query))
    assert query["state"] == "attacker-chosen-state" and query["iss"] == provider.issuer
    assert "not for this browser" in page.locator("p.error[role=alert]").inner_text()
    assert console_cookies(context) == []
    shot(page, "oidc-node-02-tampered-state")
    context.close()
    with api(hub) as admin:
        names = [u["name"] for u in admin.get("/domains/ml/users").json()["items"]]
        assert names == ["alice"]  # bob was not created
        denied = admin.get("/audit", params={"action": "SignIn", "outcome": "denied"}).json()["items"]
        assert [e["detail"]["reason"] for e in denied] == ["state mismatch"]

    # -- bob, untampered, is made on first sign-in; after a key rotation too ---------------------
    provider.rotate_keys()
    context, page = to_provider(browser, hub, log)
    provider_sign_in(page, "bob")
    wait_for_console(page, hub)
    assert signed_in_as(page) == "bob"
    context.close()
    assert log.errors == [], log.errors
