"""The local accounts' second factor (TOTP, RFC 6238), in process: the user alone sets it up and
turns it on with a code of it; from then on a password sign-in (``/sign-in/password``, the
console's form) needs a fresh code, a wrong or replayed one counting as a wrong password; turning
it off takes a code; an administrator's reset removes it. (The Chromium story is in
tests/e2e/test_e2e_accounts.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from profilerhub_core import totp
from profilerhub_core.records import accounts as account_records
from tests.hub.test_hub_accounts import GOOD, U, accept, audit_actions, console_headers, invite, password_form
from tests.support.hub import auth

NOW = 1_800_000_000.0  # the clock codes are checked against, set by the test
TWO_FACTOR = f"{U}/two-factor"


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(account_records, "clock", lambda: NOW)


def sign_in(client: Any, code: str | None = None) -> Any:
    body = {"domain": "d1", "user": "alice", "password": GOOD, **({"code": code} if code is not None else {})}
    return client.post("/api/v1/sign-in/password", json=body)


def test_two_factor_sign_in_set_up_used_and_removed_by_a_reset(client: Any, seed: Any) -> None:
    seed.user("d1", "alice")
    accept(client, invite(client, seed.admin_token)["url"], GOOD)
    browser = console_headers(client)
    assert client.get(TWO_FACTOR).json() == {"status": "off", "secret": None, "otpauth_url": None}
    assert client.get(TWO_FACTOR, headers=auth(seed.admin_token)).status_code == 403  # hers alone

    started = client.post(TWO_FACTOR, json={}, headers=browser)
    assert started.status_code == 201, started.text
    secret = started.json()["secret"]
    assert started.json()["otpauth_url"].startswith(f"otpauth://totp/ProfilerHub%3Ad1%2Falice?secret={secret}")
    assert sign_in(client).status_code == 201  # pending: not asked for yet
    wrong = client.put(TWO_FACTOR, json={"enabled": True, "code": "000000"}, headers=browser)
    assert wrong.status_code == 403 and "not right" in wrong.json()["error"]["message"]
    turn_on = {"enabled": True, "code": totp.code_at(secret, NOW - 30)}
    on = client.put(TWO_FACTOR, json=turn_on, headers=browser)
    assert on.json() == {"status": "on", "secret": None, "otpauth_url": None}  # never shown again
    assert client.post(TWO_FACTOR, json={}, headers=browser).status_code == 409

    needed = sign_in(client)
    assert needed.status_code == 401 and "one-time code" in needed.json()["error"]["message"]
    assert sign_in(client, "123456").status_code == 401
    assert sign_in(client, totp.code_at(secret, NOW)).status_code == 201
    assert sign_in(client, totp.code_at(secret, NOW)).status_code == 401  # a code works once
    assert sign_in(client, totp.code_at(secret, NOW - 30)).status_code == 401  # and no older one
    reasons = [e.detail["reason"] for e in audit_actions(seed, "SignIn") if e.outcome == "denied"]
    assert reasons == ["wrong one-time code"] * 3

    client.cookies.clear()  # the console's form asks for it too
    form = password_form(client, "d1", "alice", GOOD)
    assert form.status_code == 401 and "one-time code" in form.text
    page = client.get("/console/sign-in")
    assert 'name="code"' in page.text and 'autocomplete="one-time-code"' in page.text

    reset = invite(client, seed.admin_token)  # lost the phone: the administrator resets
    assert reset["reset"]
    assert accept(client, reset["url"], "a-fresh-start-of-hers-3").status_code == 303
    assert client.get(TWO_FACTOR).json()["status"] == "off"


def test_turning_it_off_takes_a_current_code(client: Any, seed: Any) -> None:
    seed.user("d1", "alice")
    accept(client, invite(client, seed.admin_token)["url"], GOOD)
    browser = console_headers(client)
    secret = client.post(TWO_FACTOR, json={}, headers=browser).json()["secret"]
    client.put(TWO_FACTOR, json={"enabled": True, "code": totp.code_at(secret, NOW)}, headers=browser)
    refused = client.put(TWO_FACTOR, json={"enabled": False, "code": "999999"}, headers=browser)
    assert refused.status_code == 403
    turn_off = {"enabled": False, "code": totp.code_at(secret, NOW + 30)}
    off = client.put(TWO_FACTOR, json=turn_off, headers=browser)
    assert off.status_code == 200 and off.json()["status"] == "off"
    assert sign_in(client).status_code == 201
    assert [e.detail["change"] for e in audit_actions(seed, "UpdateTwoFactor")] == ["start", "confirm", "off"]


def test_profilerhub_login_asks_for_the_code(client: Any, seed: Any, tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from profilerhub.cli.main import app

    seed.user("d1", "alice")
    accept(client, invite(client, seed.admin_token)["url"], GOOD)
    browser = console_headers(client)
    secret = client.post(TWO_FACTOR, json={}, headers=browser).json()["secret"]
    client.put(TWO_FACTOR, json={"enabled": True, "code": totp.code_at(secret, NOW)}, headers=browser)
    config = tmp_path / "config.toml"
    env = {"PROFILERHUB_URL": "", "PROFILERHUB_TOKEN": "", "PROFILERHUB_CONFIG": str(config)}
    login = ["login", str(client.base_url), "--user", "d1/alice", "--password-stdin"]
    runner = CliRunner()
    wrong = runner.invoke(app, login, env=env, obj={"http": client}, input=f"{GOOD}\n000000\n")
    assert wrong.exit_code == 1 and "one-time code is not right" in wrong.output and not config.exists()
    code = totp.code_at(secret, NOW + 30)
    done = runner.invoke(app, login, env=env, obj={"http": client}, input=f"{GOOD}\n{code}\n")
    assert done.exit_code == 0 and "as d1/alice (user)" in done.output, done.output
