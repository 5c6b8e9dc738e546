# ruff: noqa: F811  -- pytest fixtures imported from apps_stack are parameters here
"""The console and sign-in in a real headless Chromium, against a real hub, worker and apps.

One story, in order (each step builds on the last, so it is one test per concern but one stack):
the platform admin signs in with a pasted token, creates a domain and a user and starts the
user's profiler from the console; the user signs in with a presigned link and opens the profiler
in one click; another user cannot reach it; presigned links are single use and expire; a page on
another origin can neither post a form with the session nor frame the console; signing out (and
deleting a user) ends the session in every browser holding it. Screenshots go to
/tmp/console-shots/ (outside the repository) to look at.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.apps_stack import AppStack, shared_stack  # noqa: F401  (fixtures)
from tests.e2e.pages_stack import BrowserLog, launch_browser
from tests.support.hub import auth, wait_for

SHOTS = Path("/tmp/console-shots")
DOMAIN = "console"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch_browser()


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def admin_token(stack: AppStack) -> str:
    return (stack.home / "admin-token").read_text().strip()


def new_page(context: Any, log: BrowserLog | None = None) -> Any:
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())  # the console's "Delete …?" confirmations
    if log is not None:
        log.watch(page)
    return page


def sign_in_with_token(page: Any, stack: AppStack, token: str) -> None:
    page.goto(f"{stack.url}/")
    assert page.url == f"{stack.url}/console/sign-in"
    page.fill("#token", token)
    page.click("#sign-in")
    page.wait_for_url(f"{stack.url}/console/")
    page.wait_for_selector("#main h1")


def sign_in_link(stack: AppStack, token: str, user: str, **body: Any) -> dict[str, Any]:
    answer = httpx.post(
        f"{stack.url}/api/v1/domains/{DOMAIN}/users/{user}/presigned-url",
        json=body,
        headers=auth(token),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


class Attacker:
    """A web page on another origin (another port of 127.0.0.1): a form aimed at the hub, a frame."""

    def __init__(self, hub: str) -> None:
        pages = {
            "/post": f'<form id="f" method="post" action="{hub}/console/sign-out"></form>'
            '<script>document.getElementById("f").submit()</script>',
            "/frame": f'<h1>evil</h1><iframe id="victim" src="{hub}/console/"></iframe>',
        }

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = pages.get(self.path, "").encode()
                self.send_response(200 if body else 404)
                self.send_header("content-type", "text/html")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_console_sign_in_apps_links_and_browser_security(shared_stack: AppStack, browser: Any) -> None:
    stack = shared_stack
    log = BrowserLog()

    # -- the platform admin signs in with a pasted token and works in the console -----------------
    admin_ctx = browser.new_context()
    admin = new_page(admin_ctx, log)
    sign_in_with_token(admin, stack, admin_token(stack))
    cookie = next(c for c in admin_ctx.cookies() if c["name"] == "profilerhub_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and cookie["path"] == "/"
    assert admin.evaluate("document.cookie") == ""
    shot(admin, "01-admin-home")
    # The API reference renders offline, from the hub's own copy of Swagger UI.
    admin.goto(f"{stack.url}/api/v1/docs")
    admin.wait_for_selector(".swagger-ui .info .title:has-text('ProfilerHub')")
    admin.wait_for_selector(".opblock-tag:has-text('sign-in')")
    shot(admin, "01b-api-docs")

    admin.goto(f"{stack.url}/console/#/domains")
    admin.fill("input[name=name]", DOMAIN)
    admin.click("text=Create domain")
    admin.wait_for_selector("#new-user")
    admin.fill("#new-user", "carol")
    admin.click("text=Create user")
    admin.wait_for_selector("#start-app")
    admin.click("#start-app")
    # Pending turns InService without a reload (the page polls the API).
    admin.wait_for_selector("#apps .status-InService", timeout=60_000)
    assert admin.locator("#apps [data-open]").count() == 0  # an admin cannot open a user's app
    shot(admin, "02-admin-user-with-app")
    carol_app = httpx.get(
        f"{stack.url}/api/v1/domains/{DOMAIN}/users/carol/apps/DetailedProfiler/default",
        headers=auth(admin_token(stack)),
        timeout=30,
    ).json()["app_id"]

    # -- impersonation is off by default: the admin's link for carol cannot open her app ----------
    refused_ctx = browser.new_context()
    refused = new_page(refused_ctx)
    answer = refused.goto(sign_in_link(stack, admin_token(stack), "carol", landing="app")["url"])
    assert answer is not None and answer.status == 403
    assert "does not allow" in refused.content()
    refused_ctx.close()
    # ... until the platform admin allows it for the domain, from the domain's page.
    admin.goto(f"{stack.url}/console/#/domains/{DOMAIN}")
    admin.check("input[name=allow_impersonation]")
    admin.click("text=Save settings")
    admin.wait_for_selector("input[name=allow_impersonation]:checked")

    # -- carol signs in with a presigned link (landing on the console) and opens her profiler ------
    carol_ctx = browser.new_context()
    carol = new_page(carol_ctx, log)
    link = sign_in_link(
        stack, admin_token(stack), "carol", landing="console", session_expiration_seconds=1800
    )
    # A 5-second link, used once it has expired (below): made now, it expires while carol signs in.
    short = sign_in_link(stack, admin_token(stack), "carol", expires_in_seconds=5)
    expires_at = datetime.fromisoformat(short["expires_at"]).timestamp()
    carol.goto(link["url"])
    carol.wait_for_url(f"{stack.url}/console/")
    carol.wait_for_selector("#apps .status-InService")
    shot(carol, "03-user-home")
    carol.click("#apps [data-open]")
    carol.wait_for_url(f"{stack.url}/apps/{carol_app}/")
    assert carol.locator("#owner").inner_text() == "carol's profiler"
    shot(carol, "04-user-profiler")

    # The link was single use: a second browser gets a refusal, not a session.
    reuse_ctx = browser.new_context()
    reuse = new_page(reuse_ctx)
    answer = reuse.goto(link["url"])
    assert answer is not None and answer.status == 401 and "already used" in reuse.content()
    assert not [c for c in reuse_ctx.cookies() if c["name"] == "profilerhub_console"]
    # An expired link is refused too.
    wait_for(lambda: time.time() > expires_at + 1, "the 5-second link to expire", 30, interval=0.5)
    answer = reuse.goto(short["url"])
    assert answer is not None and answer.status == 401 and "expired" in reuse.content()
    shot(reuse, "05-expired-link")
    reuse_ctx.close()

    # -- another user cannot reach carol's app: not by URL, not with his own cookies ---------------
    admin_api = httpx.Client(base_url=f"{stack.url}/api/v1", headers=auth(admin_token(stack)), timeout=30)
    assert admin_api.post(f"/domains/{DOMAIN}/users", json={"name": "dave"}).status_code == 201
    dave_ctx = browser.new_context()
    dave = new_page(dave_ctx)
    dave.goto(sign_in_link(stack, admin_token(stack), "dave")["url"])
    dave.wait_for_url(f"{stack.url}/console/")
    answer = dave.goto(f"{stack.url}/apps/{carol_app}/")
    assert answer is not None and answer.status == 401 and "carol" not in dave.content()
    console_cookie = next(c for c in dave_ctx.cookies() if c["name"] == "profilerhub_console")
    dave_ctx.add_cookies(
        [
            {
                "name": "profilerhub_session",
                "value": console_cookie["value"],
                "url": f"{stack.url}/apps/{carol_app}/",
            }
        ]
    )
    answer = dave.goto(f"{stack.url}/apps/{carol_app}/")
    assert answer is not None and answer.status == 401 and "carol" not in dave.content()
    # Nor through the API pages: carol's user page is hidden from him.
    answer = dave.goto(f"{stack.url}/api/v1/domains/{DOMAIN}/users/carol")
    assert answer is not None and answer.status == 404

    # -- a page on another origin cannot use the session: no form post, no framing -----------------
    attacker = Attacker(stack.url)
    try:
        evil = new_page(carol_ctx)
        answer = evil.goto(f"{attacker.url}/post")
        evil.wait_for_url(f"{stack.url}/console/sign-out")
        assert "Cross-site request refused" in evil.content()
        carol.goto(f"{stack.url}/console/")  # carol is still signed in: the forged sign-out did nothing
        carol.wait_for_selector("#apps")
        evil.goto(f"{attacker.url}/frame")
        frame = evil.frame_locator("#victim")
        evil.wait_for_load_state("load")
        assert frame.locator("#main").count() == 0 and frame.locator("#sign-in").count() == 0
        evil.close()
    finally:
        attacker.close()

    # -- signing out ends the session in a second browser holding the same cookie -----------------
    twin_ctx = browser.new_context()
    twin_ctx.add_cookies([c for c in carol_ctx.cookies() if c["name"] == "profilerhub_console"])
    twin = new_page(twin_ctx)
    twin.goto(f"{stack.url}/console/")
    twin.wait_for_selector("#apps")
    # Leave the page: its polling would otherwise race the goto below to the sign-in page.
    twin.goto("about:blank")
    carol.goto(f"{stack.url}/console/")
    carol.click("#sign-out")
    carol.wait_for_url(f"{stack.url}/console/sign-in")
    twin.goto(f"{stack.url}/console/")
    assert twin.url.startswith(f"{stack.url}/console/sign-in")
    shot(twin, "06-signed-out")
    answer = twin.goto(f"{stack.url}/api/v1/me")
    assert answer is not None and answer.status == 401
    # No console errors, CSP violations or failed requests on the pages people used (so far: the
    # refusals below are meant).
    assert log.errors == [], log.errors
    # carol's app session was opened from that console session ("Open profiler"): it ended with it
    # (every session dies with its source, docs/console.md#sessions).
    assert carol.goto(f"{stack.url}/apps/{carol_app}/").status == 401  # type: ignore[union-attr]
    assert admin_api.delete(f"/domains/{DOMAIN}/users/carol/tokens").status_code == 204

    # -- deleting a user ends their session at once ----------------------------------------------
    admin.goto(f"{stack.url}/console/#/domains")
    admin.click(f"a:text-is('{DOMAIN}')")
    admin.wait_for_selector("td:has-text('dave')")
    admin.locator("tr", has_text="dave").locator("text=Delete").click()
    admin.wait_for_selector("tr:has-text('dave')", state="detached")
    dave.goto(f"{stack.url}/console/")
    assert dave.url.startswith(f"{stack.url}/console/sign-in")

    # -- the audit log shows sign-ins, sign-outs and the impersonated openings --------------------
    admin.goto(f"{stack.url}/console/#/audit?action=SignIn")
    admin.wait_for_selector("td:has-text('SignIn')")
    shot(admin, "07-audit")
    events = admin_api.get("/audit", params={"limit": 1000}).json()["items"]
    actions = {e["action"] for e in events}
    assert {"SignIn", "SignOut", "CreatePresignedSignInUrl"} <= actions
    assert any(e["action"] == "OpenApp" and e["detail"].get("impersonation") for e in events) or any(
        e["action"] == "SignIn" and e["detail"].get("impersonated_by") for e in events
    )
    admin_api.close()

    # Since then, only carol's refused app page (her 401 and its console line) may show up.
    assert all("401" in e for e in log.errors), log.errors
    for context in (admin_ctx, carol_ctx, dave_ctx, twin_ctx):
        context.close()
