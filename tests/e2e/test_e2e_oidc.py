"""OpenID Connect sign-in in a real headless Chromium: the browser goes from the hub's sign-in page
to a real OpenID provider on loopback (tests/support/oidc_provider.py) and back, as it would with
Keycloak or Okta. The hub is the in-process app served by uvicorn on a loopback port.

Good sign-in lands on the console signed in; a provider answer with the wrong state, nonce,
audience or issuer, or an expired or foreign-signed ID token, lands on the sign-in page with a
refusal and no session; an unknown user is refused until their domain creates users on first
sign-in. Screenshots go to /tmp/ui-shots/ (outside the repository).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import testservices
import uvicorn
from pydantic import SecretStr

from tests.e2e.pages_stack import BrowserLog, launch_browser, shot
from tests.support.hub import wait_for
from tests.support.oidc_provider import CLIENT_ID, CLIENT_SECRET, TestOpenIDProvider

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch_browser()


@pytest.fixture
def provider() -> Iterator[TestOpenIDProvider]:
    provider = TestOpenIDProvider.start()
    yield provider
    provider.stop()


@pytest.fixture
def oidc_hub(hub_settings: Any, hub_app: Any, provider: TestOpenIDProvider) -> Iterator[str]:
    """The hub, configured for the provider, on a loopback port; yields its URL."""
    from profilerhub_hub.main import create_app

    port = testservices.free_port()
    url = f"http://127.0.0.1:{port}"
    settings = hub_settings.model_copy(
        update={
            "public_url": url,
            "oidc_issuer": provider.issuer,
            "oidc_client_id": CLIENT_ID,
            "oidc_client_secret": SecretStr(CLIENT_SECRET),
            "oidc_provider_name": "Test provider",
            "oidc_default_domain": "ml",
        }
    )
    provider.redirect_uris = {f"{url}/console/oidc/callback"}
    app = create_app(settings, engine=hub_app.state.services.engine)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "the hub serving", 30)
    yield url
    server.should_exit = True
    thread.join(10)


def click_sign_in(browser: Any, hub: str, log: BrowserLog | None = None) -> tuple[Any, Any]:
    """A fresh browser context on the sign-in page, after clicking "Sign in with Test provider"."""
    context = browser.new_context()
    page = context.new_page()
    if log is not None:
        log.watch(page)
    page.goto(f"{hub}/console/")
    assert page.url == f"{hub}/console/sign-in"
    page.click("#sign-in-oidc:has-text('Sign in with Test provider')")
    page.wait_for_load_state("load")
    return context, page


def console_cookie(context: Any) -> list[Any]:
    return [c for c in context.cookies() if c["name"] == "profilerhub_console"]


@pytest.mark.parametrize("hub_db_url", ["sqlite"], indirect=True)
def test_oidc_sign_in_in_a_real_browser(
    browser: Any, oidc_hub: str, provider: TestOpenIDProvider, seed: Any
) -> None:
    seed.user("ml", "alice")
    log = BrowserLog()

    # -- a good sign-in: provider and back, signed in on the console ---------------------------
    provider.next_claims = {"preferred_username": "alice"}
    context, page = click_sign_in(browser, oidc_hub, log)
    page.wait_for_url(f"{oidc_hub}/console/")
    page.wait_for_selector("#main h1")
    assert "alice" in page.locator("header").inner_text()
    (cookie,) = console_cookie(context)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    assert not [c for c in context.cookies() if c["name"] == "profilerhub_oidc"]  # flow finished
    shot(page, "oidc-01-signed-in")
    assert page.evaluate("fetch('/api/v1/me').then(r => r.json()).then(m => m.user)") == "alice"
    assert log.errors == [], log.errors
    context.close()

    # -- every misbehaving answer lands on the sign-in page, refused, with no session ------------
    for misbehave, says in [
        ("wrong_state", "not for this browser"),
        ("wrong_nonce", "already used or is not yours"),
        ("wrong_audience", "not valid for this hub"),
        ("wrong_issuer", "not valid for this hub"),
        ("expired", "expired on its way"),
        ("foreign_key", "could not be verified"),
    ]:
        provider.misbehave = misbehave
        context, page = click_sign_in(browser, oidc_hub)
        page.wait_for_selector("p.error[role=alert]")
        assert page.url.startswith(f"{oidc_hub}/console/oidc/callback")
        assert says in page.locator("p.error").inner_text(), misbehave
        assert console_cookie(context) == [], misbehave
        if misbehave == "wrong_state":
            shot(page, "oidc-02-refused-state")
        context.close()
    provider.misbehave = None

    # -- an unknown user is refused, until the domain creates users on first sign-in -------------
    provider.next_claims = {"preferred_username": "bob"}
    context, page = click_sign_in(browser, oidc_hub)
    page.wait_for_selector("p.error[role=alert]")
    assert "no user 'bob' in domain 'ml'" in page.locator("p.error").inner_text()
    assert console_cookie(context) == []
    shot(page, "oidc-03-unknown-user")
    context.close()
    with seed.session() as session:
        from profilerhub_core.records import domains

        domains.require_domain(session, "ml").settings = {"create_users_on_sign_in": True}
        session.commit()
    context, page = click_sign_in(browser, oidc_hub, log)
    page.wait_for_url(f"{oidc_hub}/console/")
    page.wait_for_selector("#main h1")
    assert page.evaluate("fetch('/api/v1/me').then(r => r.json()).then(m => m.user)") == "bob"
    assert log.errors == [], log.errors
    context.close()

    # -- a domain administrator edits their domain's everyday settings in the console ------------
    seed.user("ml", "dana", role="admin")
    provider.next_claims = {"preferred_username": "dana"}
    context, page = click_sign_in(browser, oidc_hub, log)
    page.wait_for_url(f"{oidc_hub}/console/")
    page.goto(f"{oidc_hub}/console/#/domains/ml")
    page.wait_for_selector("input[name=idle_minutes]")
    assert page.locator("input[name=allow_impersonation]").count() == 0  # the platform's to set
    assert page.locator("input[name=create_users_on_sign_in]").count() == 0
    page.fill("input[name=idle_minutes]", "45")
    page.uncheck("input[name=users_manage_own_apps]")
    page.click("text=Save settings")
    page.wait_for_selector("input[name=users_manage_own_apps]:not(:checked)")
    shot(page, "oidc-04-domain-admin-settings")
    with seed.session() as session:
        from profilerhub_core.domain_settings import DomainSettings

        saved = DomainSettings.of(domains.require_domain(session, "ml").settings)
    assert (saved.idle_minutes, saved.users_manage_own_apps, saved.create_users_on_sign_in) == (
        45,
        False,
        True,
    )
    assert log.errors == [], log.errors
    context.close()
