# ruff: noqa: F811  -- pytest fixtures imported from apps_stack are parameters here
"""A real browser (Debian's Chromium through playwright) opens apps through the hub."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from apps_stack import AppStack, shared_stack  # noqa: F401  (fixture)

from hubfixtures import auth

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: run infra/ensure-test-deps.sh (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield chromium
        chromium.close()


def presigned_url(stack: AppStack, token: str, domain: str, user: str) -> str:
    answer = httpx.post(
        f"{stack.url}/api/v1/domains/{domain}/users/{user}/apps/DetailedProfiler/default/presigned-url",
        headers=auth(token),
        timeout=30,
    )
    answer.raise_for_status()
    return str(answer.json()["url"])


def test_owner_opens_app_in_a_browser_and_another_users_session_gets_404(
    shared_stack: AppStack, browser: Any
) -> None:
    stack = shared_stack
    alice = stack.user_token("web", "alice")
    bob = stack.user_token("web", "bob")
    alices_app = stack.running_app(alice, "web", "alice")
    stack.running_app(bob, "web", "bob")

    owner = browser.new_context()
    page = owner.new_page()
    page.goto(presigned_url(stack, alice, "web", "alice"))
    assert page.url == f"{stack.url}/apps/{alices_app}/"
    assert page.locator("#owner").inner_text() == "alice's profiler"
    cookie = next(c for c in owner.cookies() if c["name"] == "profilerhub_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and cookie["path"] == f"/apps/{alices_app}/"
    assert page.evaluate("document.cookie") == ""  # HttpOnly: scripts cannot read it
    page.reload()  # the session lasts beyond the one-time URL
    assert page.locator("#owner").inner_text() == "alice's profiler"

    intruder = browser.new_context()
    other = intruder.new_page()
    other.goto(presigned_url(stack, bob, "web", "bob"))  # bob signs in to his own app ...
    assert other.locator("#owner").inner_text() == "bob's profiler"
    answer = other.goto(f"{stack.url}/apps/{alices_app}/")  # ... and tries alice's
    # His cookie is scoped to his app's path, so the browser sends none here: 401, the same
    # answer for every app id (existing or not); a cookie of his own for her app would be 404.
    assert answer is not None and answer.status == 401
    assert "alice" not in other.content()
    owner.close()
    intruder.close()
