# ruff: noqa: F811  -- pytest fixtures imported from apps_stack are parameters here
"""Apps on origins of their own, in a real headless Chromium against a real hub, worker and apps.

The stack runs with ``PROFILERHUB_APP_SUBDOMAIN_HOST=http://apps.localhost:<port>``: Chromium
resolves every ``*.localhost`` name to the loopback address itself, so each app's origin
``http://<app id>.apps.localhost:<port>`` reaches the one hub process with no DNS set up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import testservices

from tests.e2e.apps_stack import AppStack, app_stack, browser  # noqa: F401  (fixtures)
from tests.e2e.pages_stack import BrowserLog, shot


@pytest.mark.browser
def test_each_app_opens_on_its_own_origin_and_cannot_reach_another_or_the_hub(
    app_stack: Callable[..., AppStack], browser: Any
) -> None:
    port = testservices.free_port()
    apps_host = f"apps.localhost:{port}"
    stack = app_stack(PROFILERHUB_PORT=str(port), PROFILERHUB_APP_SUBDOMAIN_HOST=f"http://{apps_host}")
    alice, bob = stack.user_token("sub", "alice"), stack.user_token("sub", "bob")
    alices, bobs = stack.running_app(alice, "sub", "alice"), stack.running_app(bob, "sub", "bob")
    alices_origin = f"http://{alices}.{apps_host}"

    log = BrowserLog()
    owner = browser.new_context()
    page = owner.new_page()
    log.watch(page)
    link = stack.presigned_url(alice, "sub", "alice")
    assert link.startswith(f"{alices_origin}/apps/{alices}/")
    page.goto(link)
    assert page.url == f"{alices_origin}/apps/{alices}/"
    assert page.locator("#owner").inner_text() == "alice's profiler"
    (cookie,) = [c for c in owner.cookies() if c["name"] == "profilerhub_session"]
    assert cookie["domain"] == f"{alices}.apps.localhost"  # host-only: no other host receives it
    assert cookie["httpOnly"] and page.evaluate("document.cookie") == ""
    page.reload()
    assert page.locator("#owner").inner_text() == "alice's profiler"
    page.wait_for_selector(".empty-state:has-text('No jobs yet')")  # the app's own API answered there
    shot(page, "app-on-its-own-origin")
    assert log.errors == []

    # The app's page cannot read the hub with the browser's credentials: another origin, no CORS.
    read_hub = page.evaluate(
        """async (url) => {
            try { await (await fetch(url, {credentials: "include"})).text(); return "read"; }
            catch (e) { return "blocked"; }
        }""",
        f"{stack.url}/api/v1/domains",
    )
    assert read_hub == "blocked"
    # Its own host serves nothing of the hub, and the hub's host sends a browser to the app's.
    assert page.evaluate("async () => (await fetch('/console/')).status") == 404
    hub_page = owner.new_page()
    hub_page.goto(f"{stack.url}/apps/{alices}/")
    assert hub_page.url == f"{alices_origin}/apps/{alices}/"
    assert hub_page.locator("#owner").inner_text() == "alice's profiler"

    # Bob's app is another origin: Alice's browser holds no session there.
    answer = page.goto(f"http://{bobs}.{apps_host}/apps/{bobs}/")
    assert answer is not None and answer.status == 401
    assert "bob's profiler" not in page.content()
    owner.close()
