# ruff: noqa: F811  -- pytest fixtures imported from apps_stack are parameters here
"""Access keys in the console, in a real headless Chromium against a real hub: a user creates a
key (its secret shown once), signs boto3 requests with it, and revokes it; an administrator sees
and manages the keys of their users. Screenshots go to /tmp/console-shots/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import httpx
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.e2e.apps_stack import AppStack, shared_stack  # noqa: F401  (fixtures)
from tests.e2e.pages_stack import BrowserLog, launch_browser
from tests.e2e.test_e2e_console import admin_token, new_page, shot, sign_in_with_token
from tests.support.hub import auth

DOMAIN = "keys"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch_browser()


def _sagemaker(stack: AppStack, key_id: str, secret: str) -> Any:
    return boto3.client(
        "sagemaker",
        endpoint_url=f"{stack.url}/sagemaker",
        region_name="us-east-1",
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}),
    )


def _created_key(page: Any) -> tuple[str, str]:
    """The key id and secret from the snippet the console shows once after creating a key."""
    snippet = page.locator("#access-key-snippet").inner_text()
    values = dict(line.removeprefix("export ").split("=", 1) for line in snippet.splitlines()[:2])
    return values["AWS_ACCESS_KEY_ID"], values["AWS_SECRET_ACCESS_KEY"]


def test_a_user_creates_uses_and_revokes_access_keys_and_their_admin_sees_them(
    shared_stack: AppStack, browser: Any
) -> None:
    stack = shared_stack
    log = BrowserLog()
    admin_api = httpx.Client(base_url=f"{stack.url}/api/v1", headers=auth(admin_token(stack)), timeout=30)
    assert admin_api.post("/domains", json={"name": DOMAIN}).status_code == 201
    assert admin_api.post(f"/domains/{DOMAIN}/users", json={"name": "frank"}).status_code == 201
    user_path = f"/domains/{DOMAIN}/users/frank"
    token = admin_api.post(f"{user_path}/tokens", json={"note": "frank's browser"}).json()["token"]

    # -- the user: create a key, see the secret once, use it, revoke it ---------------------------
    frank = new_page(browser.new_context(), log)
    sign_in_with_token(frank, stack, token)
    frank.wait_for_selector("#access-keys-section h2:has-text('My access keys')")
    frank.wait_for_selector("#access-keys:has-text('No access keys yet.')")
    frank.fill("#access-key-note", "laptop")
    frank.click("text=Create access key")
    frank.wait_for_selector("#access-key-snippet")
    key_id, secret = _created_key(frank)
    frank.wait_for_selector(f"#access-keys tr:has-text('{key_id}') .status-active")
    shot(frank, "20-user-access-key-created")
    listed = admin_api.get(f"{user_path}/access-keys").json()["items"]
    assert [(k["access_key_id"], k["status"]) for k in listed] == [(key_id, "active")]
    assert listed[0]["note"].endswith("laptop")
    assert secret not in admin_api.get(f"{user_path}/access-keys").text  # the secret is never listed

    sm = _sagemaker(stack, key_id, secret)
    assert [d["DomainName"] for d in sm.list_domains()["Domains"]] == [DOMAIN]  # acts as frank

    frank.reload()
    frank.wait_for_selector(f"#access-keys tr:has-text('{key_id}')")
    assert frank.locator("#access-key-snippet").count() == 0  # shown once: gone after a reload
    frank.click(f"#access-keys tr:has-text('{key_id}') button:has-text('Revoke')")
    frank.wait_for_selector(f"#access-keys tr:has-text('{key_id}') .status-revoked")
    with pytest.raises(ClientError) as refused:
        sm.list_domains()
    assert refused.value.response["Error"]["Code"] == "UnrecognizedClientException"

    # -- the administrator: sees the user's keys, makes one for them and revokes it ---------------
    admin = new_page(browser.new_context(), log)
    sign_in_with_token(admin, stack, admin_token(stack))
    admin.goto(f"{stack.url}/console/#/domains/{DOMAIN}/users/frank")
    admin.wait_for_selector(f"#access-keys tr:has-text('{key_id}') .status-revoked")
    admin.fill("#access-key-note", "ci")
    admin.click("text=Create access key")
    admin.wait_for_selector("#access-key-snippet")
    admin_key, admin_secret = _created_key(admin)
    made_for_frank = _sagemaker(stack, admin_key, admin_secret)
    # The key acts as frank, not as the administrator who made it.
    assert [d["DomainName"] for d in made_for_frank.list_domains()["Domains"]] == [DOMAIN]
    admin.click(f"#access-keys tr:has-text('{admin_key}') button:has-text('Revoke')")
    admin.wait_for_selector(f"#access-keys tr:has-text('{admin_key}') .status-revoked")
    shot(admin, "21-admin-user-access-keys")
    keys = admin_api.get(f"{user_path}/access-keys").json()["items"]
    statuses = {k["access_key_id"]: k["status"] for k in keys}
    assert statuses == {key_id: "revoked", admin_key: "revoked"}
    for client in (admin_api, sm, made_for_frank):
        client.close()
    assert log.errors == [], log.errors  # no console error, no failed or refused request
