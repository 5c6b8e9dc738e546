# ruff: noqa: F811  -- pytest fixtures imported from apps_stack are parameters here
"""Local accounts in a real headless Chromium, against a real hub, worker and apps, with no
impersonation anywhere (the domain keeps ``allow_impersonation`` off):

an administrator invites Alice from her user page; Alice opens the link, chooses a password and
lands in the console as herself; she creates a token of her own, starts her profiler and opens
it in one click; the same token drives the SDK in a real training process, whose job she sees;
she signs out and back in with her name and password on the sign-in page (Enter submits); she
turns on two-factor sign-in on her page, and then signs in with her password and a one-time code.
Screenshots go to /tmp/accounts-shots/ (outside the repository) to look at.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from profilerhub_core import totp
from tests.e2e.apps_stack import AppStack, shared_stack  # noqa: F401  (fixtures)
from tests.e2e.pages_stack import BrowserLog, launch_browser
from tests.support.hub import auth

SHOTS = Path("/tmp/accounts-shots")
DOMAIN = "team"
PASSWORD = "tangerine-glacier-owl-81"
SCRIPT = """
import json, profilerhub as ph
ph.init(job="alice-first-run")
for i in range(3):
    with ph.step(i):
        with ph.annotate("forward"):
            pass
print("FINISHED " + json.dumps(ph.finish()), flush=True)
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch_browser()


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_an_invited_user_sets_a_password_and_works_with_credentials_of_her_own(
    shared_stack: AppStack, browser: Any, tmp_path: Path
) -> None:
    stack, log = shared_stack, BrowserLog()
    admin_token = (stack.home / "admin-token").read_text().strip()
    for url, body in ((f"{stack.url}/api/v1/domains", {"name": DOMAIN}),
                      (f"{stack.url}/api/v1/domains/{DOMAIN}/users", {"name": "alice"})):  # fmt: skip
        assert httpx.post(url, json=body, headers=auth(admin_token), timeout=30).status_code == 201

    # -- the administrator invites Alice from her user page -----------------------------------------
    admin = browser.new_context().new_page()
    log.watch(admin)
    admin.goto(f"{stack.url}/console/sign-in")
    admin.fill("#token", admin_token)
    admin.press("#token", "Enter")  # a one-line field: Enter signs in
    admin.wait_for_url(f"{stack.url}/console/")
    admin.goto(f"{stack.url}/console/#/domains/{DOMAIN}/users/alice")
    admin.wait_for_selector("#invitations-section")
    admin.click("#invitations-section button:text-is('Invite')")
    link = admin.wait_for_selector("#invitation-url").inner_text().strip()
    admin.wait_for_selector("#invitations .status-open")
    assert link.startswith(f"{stack.url}/console/invitation?token=phi_")
    shot(admin, "01-admin-invites-alice")

    # -- Alice chooses a password and lands in the console as herself ----------------------------
    alice_ctx = browser.new_context()
    alice = alice_ctx.new_page()
    log.watch(alice)
    alice.goto(link)
    alice.wait_for_selector("h1:has-text('Welcome, alice')")
    shot(alice, "02-invitation-form")
    alice.fill("#new-password", "password12345")
    alice.fill("#new-password-again", "password12345")
    alice.click("#set-password")
    alice.wait_for_selector("[role=alert]:has-text('common')")  # refused, the link still works
    shot(alice, "03-common-password-refused")
    alice.fill("#new-password", PASSWORD)
    alice.fill("#new-password-again", PASSWORD)
    alice.click("#set-password")
    alice.wait_for_url(f"{stack.url}/console/")
    alice.wait_for_selector(".who:has-text('team/alice')")
    me = alice.evaluate("fetch('/api/v1/me').then((r) => r.json())")
    assert me["user"] == "alice" and me["impersonated_by"] is None
    admin.reload()
    admin.wait_for_selector("#invitations .status-used")

    # -- her own token, her own app, opened in one click -----------------------------------------
    alice.goto(f"{stack.url}/console/#/domains/{DOMAIN}/users/alice")
    alice.wait_for_selector("#password-section")
    alice.fill("input[name=note]", "laptop")
    alice.click("text=Create token")
    snippet = alice.wait_for_selector("#token-snippet").inner_text()
    token = snippet.split("PROFILERHUB_TOKEN=")[1].split()[0]
    shot(alice, "04-alice-own-token")
    alice.goto(f"{stack.url}/console/")
    alice.click("#start-app")
    alice.wait_for_selector("#apps .status-InService", timeout=60_000)
    alice.click("#apps [data-open]")
    alice.wait_for_url(f"{stack.url}/apps/**", timeout=30_000)
    alice.wait_for_selector("h1:has-text('Jobs')")
    alice.wait_for_selector("text=Loading jobs", state="detached")
    shot(alice, "05-alice-in-her-profiler")
    assert "/apps/" in alice.url

    # -- the same token drives the SDK -----------------------------------------------------------
    (tmp_path / "train.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
    env |= {
        "PROFILERHUB_URL": stack.url,
        "PROFILERHUB_TOKEN": token,
        "PROFILERHUB_SPILL_DIR": str(tmp_path / "spill"),
    }
    run = subprocess.run([sys.executable, "train.py"], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=240)  # fmt: skip
    assert run.returncode == 0 and '"completed": true' in run.stdout, run.stdout + run.stderr + stack.output()
    jobs = httpx.get(f"{stack.url}/api/v1/domains/{DOMAIN}/users/alice/jobs", headers=auth(token), timeout=30)
    assert [j["name"] for j in jobs.json()["items"]] == ["alice-first-run"]

    # -- signed out, back in with her name and password (Enter submits) --------------------------
    alice.goto(f"{stack.url}/console/")
    alice.click("#sign-out")
    alice.wait_for_url(f"{stack.url}/console/sign-in")
    alice.fill("#domain", DOMAIN)
    alice.fill("#user", "alice")
    alice.fill("#password", "not-my-password-00")
    alice.press("#password", "Enter")
    alice.wait_for_selector("[role=alert]:has-text('Wrong domain, user name or password')")
    shot(alice, "06-wrong-password")
    alice.fill("#password", PASSWORD)
    alice.press("#password", "Enter")
    alice.wait_for_url(f"{stack.url}/console/")
    alice.wait_for_selector("#apps .status-InService")
    shot(alice, "07-alice-home")

    # -- she turns on two-factor sign-in; the password alone no longer signs her in --------------
    alice.goto(f"{stack.url}/console/#/domains/{DOMAIN}/users/alice")
    alice.click("text=Set up two-factor sign-in")
    secret = alice.wait_for_selector("#two-factor-secret").inner_text().strip()
    assert alice.get_attribute("#two-factor-url", "href").startswith("otpauth://totp/")
    alice.fill("#two-factor-code", totp.code_at(secret, time.time()))
    alice.click("text=Turn on")
    alice.wait_for_selector("#two-factor .status-on")
    shot(alice, "08-two-factor-on")
    alice.click("#sign-out")
    alice.wait_for_url(f"{stack.url}/console/sign-in")
    alice.fill("#domain", DOMAIN)
    alice.fill("#user", "alice")
    alice.fill("#password", PASSWORD)
    alice.press("#password", "Enter")
    alice.wait_for_selector("[role=alert]:has-text('one-time code')")
    alice.fill("#password", PASSWORD)
    alice.fill("#code", totp.code_at(secret, time.time() + totp.PERIOD))  # the next code: one not used yet
    alice.press("#code", "Enter")
    alice.wait_for_url(f"{stack.url}/console/")
    assert alice.evaluate("fetch('/api/v1/me').then((r) => r.json())")["user"] == "alice"
    # The two refusals asked for above (and Chromium's console line for each) are the only errors.
    expected = (f"HTTP 400: {stack.url}/console/invitation", f"HTTP 401: {stack.url}/console/sign-in",
                "status of 400", "status of 401")  # fmt: skip
    assert not [e for e in log.errors if not any(x in e for x in expected)], log.errors
