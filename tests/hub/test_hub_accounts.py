"""Local accounts in process: an administrator invites, the user chooses a password and is signed
in as themselves; sign-in by name and password (console form and ``/sign-in/password``);
password change; a reset (a new invitation) ends the user's sessions, revokes the tokens and
access keys descended from the password (and no other), and locks the old password out;
invitations are single-use, expire, are revocable and audited; wrong passwords are rate limited
per account and per address without refusing anyone else. (The Chromium story is in
tests/e2e/test_e2e_accounts.py.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from profilerhub_core.db.models import ApiToken, AuditEvent, Invitation, LocalPassword, utcnow
from tests.support.hub import auth

U = "/api/v1/domains/d1/users/alice"
GOOD = "plum-kettle-harbour-42"


def origin(client: Any) -> dict[str, str]:
    return {"origin": client.app.state.services.settings.public_url}


def invite(client: Any, admin: str, user: str = "alice", **body: Any) -> dict[str, Any]:
    answer = client.post(f"/api/v1/domains/d1/users/{user}/invitations", headers=auth(admin), json=body)
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def accept(client: Any, url: str, password: str, again: str | None = None) -> Any:
    """Open the invitation as a browser would and submit the form."""
    parts = urlsplit(url)
    form = client.get(f"{parts.path}?{parts.query}")
    assert form.status_code == 200, form.text
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form.text))
    fields |= {"password": password, "again": password if again is None else again}
    return client.post(parts.path, data=fields, headers=origin(client), follow_redirects=False)


def password_form(client: Any, domain: str, user: str, password: str) -> Any:
    page = client.get("/console/sign-in")
    signin = re.search(r'name="signin" value="([^"]+)"', page.text)
    assert signin and 'id="password-form"' in page.text
    data = {
        "signin": signin.group(1),
        "method": "password",
        "domain": domain,
        "user": user,
        "password": password,
    }
    return client.post("/console/sign-in", data=data, headers=origin(client), follow_redirects=False)


def me(client: Any) -> Any:
    return client.get("/api/v1/me")


def audit_actions(seed: Any, action: str) -> list[AuditEvent]:
    with seed.session() as session:
        return list(
            session.scalars(sa.select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id))
        )


def test_an_invited_user_chooses_a_password_and_is_signed_in_as_themselves(client: Any, seed: Any) -> None:
    seed.user("d1", "alice")
    made = invite(client, seed.admin_token)
    assert made["status"] == "open" and made["created_by"] == "system/admin" and not made["reset"]
    public_url = client.app.state.services.settings.public_url
    assert made["url"].startswith(f"{public_url}/console/invitation?token=phi_")
    days = (made["expires_at"][:10], (utcnow() + timedelta(days=7)).date().isoformat())
    assert days[0] == days[1]

    weak = accept(client, made["url"], "password1234")  # common: refused, the link stays usable
    assert weak.status_code == 400 and "common" in weak.text
    assert accept(client, made["url"], GOOD, "something-else-1").status_code == 400
    answer = accept(client, made["url"], GOOD)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/", answer.text
    who = me(client).json()
    assert (who["domain"], who["user"], who["impersonated_by"]) == ("d1", "alice", None)

    # What she makes now is her own: a token without created_by.
    page = client.get("/console/")
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert csrf
    made_token = client.post(f"{U}/tokens", json={"note": "mine"},
                             headers={**origin(client), "x-csrf-token": csrf.group(1)})  # fmt: skip
    assert made_token.status_code == 201, made_token.text
    with seed.session() as session:
        row = session.get(ApiToken, made_token.json()["token_id"])
        assert row is not None and row.created_by is None
        stored = session.scalar(sa.select(LocalPassword))
        assert (
            stored is not None
            and stored.password_hash.startswith("$argon2id$")
            and GOOD not in stored.password_hash
        )

    # Used once: the link is dead now, in every way.
    client.cookies.clear()
    again = client.get(urlsplit(made["url"]).path + "?" + urlsplit(made["url"]).query)
    assert again.status_code == 401 and "already used" in again.text
    listed = client.get(f"{U}/invitations", headers=auth(seed.admin_token)).json()["items"]
    assert [i["status"] for i in listed] == ["used"]
    assert [e.outcome for e in audit_actions(seed, "AcceptInvitation")] == ["success"]
    assert audit_actions(seed, "CreateInvitation")[0].actor == "system/admin"


def test_password_sign_in_on_the_form_and_for_a_token(client: Any, seed: Any) -> None:
    seed.user("d1", "alice")
    accept(client, invite(client, seed.admin_token)["url"], GOOD)
    client.cookies.clear()

    wrong = password_form(client, "d1", "alice", "not-her-password-9")
    assert wrong.status_code == 401 and "Wrong domain, user name or password" in wrong.text
    assert 'value="alice"' in wrong.text  # what she typed is kept, the password is not
    assert password_form(client, "d1", "nobody", GOOD).status_code == 401  # alike for unknown users
    assert password_form(client, "d1", "alice", GOOD).status_code == 303
    assert me(client).json()["user"] == "alice"
    client.cookies.clear()

    body = {"domain": "d1", "user": "alice", "password": GOOD, "note": "laptop"}
    answer = client.post("/api/v1/sign-in/password", json=body)
    assert answer.status_code == 201, answer.text
    token = answer.json()["token"]
    assert client.get("/api/v1/me", headers=auth(token)).json()["impersonated_by"] is None
    refused = client.post("/api/v1/sign-in/password", json={**body, "password": "x"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "Unauthorized"
    denied = [e for e in audit_actions(seed, "SignIn") if e.outcome == "denied"]
    assert {e.target for e in denied} == {"d1/alice", "d1/nobody"}


def test_a_reset_ends_the_users_sessions_and_locks_the_old_password_out(client: Any, seed: Any) -> None:
    seed.user("d1", "alice")
    first = invite(client, seed.admin_token)
    accept(client, first["url"], GOOD)
    assert me(client).status_code == 200

    reset = invite(client, seed.admin_token)
    assert reset["reset"] and reset["sessions_ended"] >= 1
    assert me(client).status_code == 401  # her browser is signed out at once
    client.cookies.clear()
    assert password_form(client, "d1", "alice", GOOD).status_code == 401  # the old password is gone
    statuses = {
        i["invitation_id"]: i["status"]
        for i in client.get(f"{U}/invitations", headers=auth(seed.admin_token)).json()["items"]
    }
    assert statuses == {first["invitation_id"]: "used", reset["invitation_id"]: "open"}
    assert accept(client, reset["url"], "a-new-one-of-hers-7").status_code == 303


def console_headers(client: Any) -> dict[str, str]:
    """What a state-changing request of the console's signed-in page sends (origin, CSRF token)."""
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/console/").text)
    assert csrf, "not signed in to the console"
    return {**origin(client), "x-csrf-token": csrf.group(1)}


def test_a_reset_revokes_every_token_and_key_descended_from_the_password_and_no_other(
    client: Any, seed: Any
) -> None:
    seed.user("d1", "alice")
    operators = seed.token("d1", "alice", note="the operator's, from the command line")
    accept(client, invite(client, seed.admin_token)["url"], GOOD)  # a password session
    browser = console_headers(client)
    in_session = client.post(f"{U}/tokens", json={"note": "made in the console"}, headers=browser)
    key = client.post(f"{U}/access-keys", json={"note": "boto3"}, headers=browser)
    assert in_session.status_code == key.status_code == 201, (in_session.text, key.text)
    body = {"domain": "d1", "user": "alice", "password": GOOD, "note": "profilerhub login"}
    login = client.post("/api/v1/sign-in/password", json=body).json()["token"]
    child = client.post(f"{U}/tokens", json={"note": "minted with the login's"}, headers=auth(login))
    link = client.post(f"{U}/presigned-url", json={}, headers=auth(login))
    assert child.status_code == 201 and link.status_code == 200, (child.text, link.text)
    descended = [in_session.json()["token"], login, child.json()["token"]]
    with seed.session() as session:
        rows = session.execute(sa.select(ApiToken.note, ApiToken.source))
        sources = {note: source for note, source in rows}
    assert sources["the operator's, from the command line"] is None
    assert {sources[n] for n in ("made in the console", "access key: boto3", "profilerhub login",
                                 "minted with the login's")} == {"password"}  # fmt: skip
    client.cookies.clear()

    reset = invite(client, seed.admin_token)
    assert reset["reset"] and reset["tokens_revoked"] == 4
    for token in descended:
        assert client.get("/api/v1/me", headers=auth(token)).status_code == 401
    with seed.session() as session:
        of_key = ApiToken.prefix == key.json()["access_key_id"]
        revoked = session.scalar(sa.select(ApiToken.revoked_at).where(of_key))
    assert revoked is not None  # the access key signs nothing any more
    parts = urlsplit(link.json()["url"])
    assert client.get(f"{parts.path}?{parts.query}", follow_redirects=False).status_code == 401
    assert client.get("/api/v1/me", headers=auth(operators)).status_code == 200  # not the password's
    (event,) = [e for e in audit_actions(seed, "CreateInvitation") if e.detail["reset"]]
    assert event.detail["tokens_revoked"] == 4

    # Deleting the user ends everything of theirs, the operator's token included.
    assert client.delete(U, headers=auth(seed.admin_token)).status_code == 204
    assert client.get("/api/v1/me", headers=auth(operators)).status_code == 401


def test_invitations_expire_are_revocable_and_only_for_administrators(client: Any, seed: Any) -> None:
    alice = seed.user_token("d1", "alice")
    seed.user("d1", "bob")
    assert client.post(f"{U}/invitations", headers=auth(alice), json={}).status_code == 403
    made = invite(client, seed.admin_token, expires_in_seconds=300)
    gone = client.delete(f"{U}/invitations/{made['invitation_id']}", headers=auth(seed.admin_token))
    assert gone.status_code == 204
    page = client.get(urlsplit(made["url"]).path + "?" + urlsplit(made["url"]).query)
    assert page.status_code == 401 and "revoked" in page.text

    late = invite(client, seed.admin_token, user="bob")
    with seed.session() as session:
        session.execute(sa.update(Invitation).where(Invitation.id == late["invitation_id"])
                        .values(expires_at=utcnow() - timedelta(seconds=1)))  # fmt: skip
        session.commit()
    page = client.get(urlsplit(late["url"]).path + "?" + urlsplit(late["url"]).query)
    assert page.status_code == 401 and "valid until" in page.text
    assert client.get("/console/invitation?token=phi_forged").status_code == 401
    assert (
        client.post(
            f"{U}/invitations", headers=auth(seed.admin_token), json={"expires_in_seconds": 5}
        ).status_code
        == 422
    )


def test_only_the_user_changes_their_password_and_their_other_sessions_end(
    client: Any, seed: Any, hub_app: Any
) -> None:
    from fastapi.testclient import TestClient

    seed.user("d1", "alice")
    accept(client, invite(client, seed.admin_token)["url"], GOOD)
    with TestClient(hub_app) as laptop:
        assert password_form(laptop, "d1", "alice", GOOD).status_code == 303
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/console/").text)
        assert csrf
        headers = {**origin(client), "x-csrf-token": csrf.group(1)}
        change = {"current_password": "wrong-wrong-wrong", "new_password": "second-plum-harbour-8"}
        assert client.put(f"{U}/password", json=change, headers=headers).status_code == 403
        by_admin = client.put(f"{U}/password", json=change, headers=auth(seed.admin_token))
        assert by_admin.status_code == 403 and "invitation" in by_admin.json()["error"]["message"]
        ok = client.put(f"{U}/password", json={**change, "current_password": GOOD}, headers=headers)
        assert ok.status_code == 204, ok.text
        assert me(client).status_code == 200  # this browser stays signed in
        assert laptop.get("/api/v1/me").status_code == 401  # the other one does not
        assert password_form(laptop, "d1", "alice", "second-plum-harbour-8").status_code == 303


@pytest.fixture
def limited(hub_settings: Any, hub_app: Any) -> Iterator[Callable[..., Any]]:
    from fastapi.testclient import TestClient

    from profilerhub_hub.main import create_app

    clients: list[Any] = []

    def make(**extra: Any) -> Any:
        settings = hub_settings.model_copy(update=extra)
        client = TestClient(create_app(settings, engine=hub_app.state.services.engine))
        clients.append(client.__enter__())
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def test_wrong_passwords_are_limited_per_account_and_per_address_not_for_others(
    client: Any, seed: Any, limited: Callable[..., Any]
) -> None:
    alice_token = seed.user_token("d1", "alice")
    seed.user("d1", "bob")
    accept(client, invite(client, seed.admin_token)["url"], GOOD)
    accept(client, invite(client, seed.admin_token, user="bob")["url"], "quiet-lantern-orchard-5")
    hub = limited(rate_limit_password_failures_account=2, rate_limit_password_failures_address=5)
    body = {"domain": "d1", "user": "alice", "password": "guess-guess-guess"}
    assert [hub.post("/api/v1/sign-in/password", json=body).status_code for _ in range(2)] == [401, 401]
    locked = hub.post("/api/v1/sign-in/password", json={**body, "password": GOOD})
    assert locked.status_code == 429 and "this account" in locked.json()["error"]["message"]
    # Bob, and Alice's token, are not refused.
    bob = {"domain": "d1", "user": "bob", "password": "quiet-lantern-orchard-5"}
    assert hub.post("/api/v1/sign-in/password", json=bob).status_code == 201
    assert hub.get("/api/v1/me", headers=auth(alice_token)).status_code == 200
    # The address: 5 failures over several accounts, then its password sign-ins wait too.
    for name in ("bob", "carol", "dave"):
        hub.post("/api/v1/sign-in/password", json={**bob, "user": name, "password": "guess-guess-guess"})
    throttled = hub.post("/api/v1/sign-in/password", json=bob)
    assert throttled.status_code == 429 and "your address" in throttled.json()["error"]["message"]
    assert hub.get("/api/v1/me", headers=auth(alice_token)).status_code == 200


def test_local_accounts_are_off_where_an_openid_provider_signs_users_in(
    hub_settings: Any, hub_app: Any, seed: Any
) -> None:
    from fastapi.testclient import TestClient

    from profilerhub_hub.main import create_app

    seed.user("d1", "alice")
    settings = hub_settings.model_copy(update={"local_accounts": False})
    with TestClient(create_app(settings, engine=hub_app.state.services.engine)) as hub:
        refused = hub.post(f"{U}/invitations", headers=auth(seed.admin_token), json={})
        assert (
            refused.status_code == 403 and "PROFILERHUB_LOCAL_ACCOUNTS" in refused.json()["error"]["message"]
        )
        assert 'id="password-form"' not in hub.get("/console/sign-in").text
    assert (
        hub_settings.model_copy(update={"oidc_issuer": "https://idp.example"}).local_accounts_enabled is False
    )
    assert hub_settings.local_accounts_enabled is True


def test_the_terminal_invites_and_signs_in_with_a_name_and_password(
    client: Any, seed: Any, tmp_path: Any
) -> None:
    from typer.testing import CliRunner

    from profilerhub.cli.main import app

    seed.user("d1", "alice")
    runner, config = CliRunner(), tmp_path / "config.toml"
    env = {
        "PROFILERHUB_URL": "",
        "PROFILERHUB_TOKEN": "",
        "PROFILERHUB_CONFIG": str(config),
        "PROFILERHUB_OUTPUT": "json",
    }
    as_admin = {**env, "PROFILERHUB_URL": str(client.base_url), "PROFILERHUB_TOKEN": seed.admin_token}
    done = runner.invoke(app, ["users", "invite", "alice", "-d", "d1"], env=as_admin, obj={"http": client})
    assert done.exit_code == 0, done.output
    url = json.loads(done.stdout)["url"]
    assert accept(client, url, GOOD).status_code == 303
    login = ["login", str(client.base_url), "--user", "d1/alice", "--password-stdin"]
    wrong = runner.invoke(app, login, env=env, obj={"http": client}, input="nope-nope-nope\n")
    assert wrong.exit_code == 1 and "invitation" in wrong.output and not config.exists()
    done = runner.invoke(app, login, env=env, obj={"http": client}, input=GOOD + "\n")
    assert done.exit_code == 0, done.output
    assert "as d1/alice (user)" in done.output and config.exists()
    saved = config.read_text()
    token = re.search(r'token = "([^"]+)"', saved)
    assert token and client.get("/api/v1/me", headers=auth(token.group(1))).json()["impersonated_by"] is None


def test_an_invitation_is_used_from_a_script_or_terminal_for_a_token_of_ones_own(
    client: Any, seed: Any, tmp_path: Any
) -> None:
    from typer.testing import CliRunner

    from profilerhub.cli.main import app

    seed.user("d1", "alice")
    seed.user("d1", "bob")
    made = invite(client, seed.admin_token)
    weak = client.post("/api/v1/sign-in/invitation", json={"invitation": made["url"], "password": "short"})
    assert weak.status_code == 400 and "at least 12" in weak.json()["error"]["message"]
    answer = client.post("/api/v1/sign-in/invitation", json={"invitation": made["url"], "password": GOOD})
    assert answer.status_code == 201, answer.text
    who = client.get("/api/v1/me", headers=auth(answer.json()["token"])).json()
    assert (who["user"], who["impersonated_by"]) == ("alice", None)
    again = client.post("/api/v1/sign-in/invitation", json={"invitation": made["url"], "password": GOOD})
    assert again.status_code == 401 and "already used" in again.json()["error"]["message"]
    assert password_form(client, "d1", "alice", GOOD).status_code == 303

    # profilerhub login --invitation LINK: the hub is the link's, the password asked twice.
    config = tmp_path / "config.toml"
    env = {"PROFILERHUB_URL": "", "PROFILERHUB_TOKEN": "", "PROFILERHUB_CONFIG": str(config)}
    link = invite(client, seed.admin_token, user="bob")["url"]
    typed = "quiet-lantern-orchard-5\nquiet-lantern-orchard-5\n"
    done = CliRunner().invoke(
        app, ["login", "--invitation", link], env=env, obj={"http": client}, input=typed
    )
    assert done.exit_code == 0, done.output
    assert "as d1/bob (user)" in done.output and "http://127.0.0.1:8080" in done.output
