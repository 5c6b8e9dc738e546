"""The console's sign-in, sessions and browser security, in process (the Chromium story is in
tests/e2e/test_e2e_console.py).

Who may reach what through the console: the pages show nothing without a session; a session is
the signed-in user's, with the API's permissions (same routes, same answers as a token); a
cookie-carried change needs the hub's origin and the session's CSRF token; a token or link that
an administrator made for a user cannot open the user's apps unless the domain allows it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa

from profilerhub_core.db.models import ApiToken, AuditEvent, Domain
from tests.support.hub import auth

U = "/api/v1/domains/d1/users/alice"


def origin(client: Any) -> dict[str, str]:
    return {"origin": client.app.state.services.settings.public_url}


def sign_in(client: Any, token: str) -> str:
    """Sign in through the form as a browser would; return the page's CSRF token."""
    form = client.get("/console/sign-in")
    signin = re.search(r'name="signin" value="([^"]+)"', form.text)
    assert form.status_code == 200 and signin
    answer = client.post(
        "/console/sign-in",
        data={"signin": signin.group(1), "token": token},
        headers=origin(client),
        follow_redirects=False,
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/console/", answer.text
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
    page = client.get("/console/")
    match = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert page.status_code == 200 and match
    return match.group(1)


def test_console_pages_need_a_session_and_carry_strict_headers(client: Any) -> None:
    assert client.get("/", follow_redirects=False).headers["location"] == "/console/"
    answer = client.get("/console/", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in"
    page = client.get("/console/sign-in")
    csp = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "unsafe" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "same-origin"
    assert page.headers["cache-control"] == "no-store"
    assert "<script>" not in page.text and "style=" not in page.text


def test_session_acts_with_the_users_permissions_through_the_same_api(client: Any, seed: Any) -> None:
    csrf = sign_in(client, seed.user_token("d1", "alice"))
    assert client.get("/api/v1/me").json()["session"] is True
    assert client.get(f"{U}/tokens").status_code == 200
    assert client.get("/api/v1/domains/d1/users/bob").status_code == 404  # hidden, as with a token
    seed.user("d1", "bob")
    assert client.get("/api/v1/domains/d1/users/bob").status_code == 404
    assert client.get("/api/v1/audit").status_code == 403  # not an admin
    made = client.post(f"{U}/tokens", json={"note": "x"}, headers={"x-csrf-token": csrf, **origin(client)})
    assert made.status_code == 201 and made.headers["cache-control"] == "no-store"
    assert made.json()["token"].startswith("phk_")


def test_cookie_changes_need_the_hubs_origin_and_the_csrf_token(client: Any, seed: Any) -> None:
    csrf = sign_in(client, seed.user_token("d1", "alice"))
    body = {"note": "x"}
    missing = client.post(f"{U}/tokens", json=body, headers=origin(client))
    assert missing.status_code == 403 and "CSRF" in missing.json()["error"]["message"]
    evil = client.post(
        f"{U}/tokens", json=body, headers={"x-csrf-token": csrf, "origin": "http://evil.example"}
    )
    assert evil.status_code == 403 and "Cross-site" in evil.json()["error"]["message"]
    host = client.post(
        f"{U}/tokens", json=body, headers={"x-csrf-token": csrf, "origin": "http://testserver"}
    )
    assert host.status_code == 403  # the request's own Host proves nothing
    assert client.get(f"{U}/tokens").json()["items"][-1]["note"] != "x"  # nothing was made
    signout = client.post("/console/sign-out", data={"csrf": "wrong"}, headers=origin(client))
    assert signout.status_code == 403
    assert client.get("/api/v1/me").status_code == 200  # still signed in


def test_sign_out_and_revoking_everywhere_end_the_session(client: Any, seed: Any) -> None:
    token = seed.user_token("d1", "alice")
    csrf = sign_in(client, token)
    kept = dict(client.cookies)
    out = client.post(
        "/console/sign-out", data={"csrf": csrf}, headers=origin(client), follow_redirects=False
    )
    assert out.status_code == 303 and out.headers["location"] == "/console/sign-in"
    client.cookies.update(kept)  # a second browser holding the same cookie
    assert client.get("/api/v1/me").status_code == 401
    sign_in(client, token)
    assert client.delete(f"{U}/tokens", headers=auth(seed.admin_token)).status_code == 204
    assert client.get("/api/v1/me").status_code == 401
    assert client.get("/api/v1/me", headers=auth(token)).status_code == 401  # the token too


def test_a_bad_token_is_refused_and_audited(client: Any, seed: Any) -> None:
    form = client.get("/console/sign-in")
    signin = re.search(r'name="signin" value="([^"]+)"', form.text)
    assert signin
    answer = client.post(
        "/console/sign-in", data={"signin": signin.group(1), "token": "phk_nope"}, headers=origin(client)
    )
    assert answer.status_code == 401 and "not valid" in answer.text
    forged = client.post(
        "/console/sign-in", data={"signin": "x", "token": "phk_nope"}, headers=origin(client)
    )
    assert forged.status_code == 403
    with seed.session() as session:
        outcomes = session.scalars(sa.select(AuditEvent.outcome).where(AuditEvent.action == "SignIn")).all()
    assert "denied" in [o.lower() for o in outcomes]


def test_presigned_sign_in_url_is_single_use_and_bounded(client: Any, seed: Any) -> None:
    alice = seed.user_token("d1", "alice")
    for bad in ({"expires_in_seconds": 4}, {"expires_in_seconds": 301}, {"session_expiration_seconds": 1799},
                {"session_expiration_seconds": 43201}, {"landing": "elsewhere"}):  # fmt: skip
        answer = client.post(f"{U}/presigned-url", json=bad, headers=auth(alice))
        assert answer.status_code == 422, bad
    link = client.post(f"{U}/presigned-url", json={}, headers=auth(alice))
    assert link.status_code == 200 and link.json()["impersonated_by"] is None
    assert link.headers["cache-control"] == "no-store"
    url = urlsplit(link.json()["url"])
    path = f"{url.path}?{url.query}"
    first = client.get(path, follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/console/"
    assert client.get("/api/v1/me").json()["user"] == "alice"
    client.cookies.clear()
    again = client.get(path, follow_redirects=False)
    assert again.status_code == 401 and "already used" in again.text
    tampered = client.get(path[:-4] + "AAAA", follow_redirects=False)
    assert tampered.status_code == 401


def test_an_admins_token_for_a_user_cannot_open_their_app_unless_the_domain_allows(
    client: Any, seed: Any
) -> None:
    seed.user_token("d1", "alice")
    admin = auth(seed.user_token("d1", "boss", role="admin"))
    made = client.post(f"{U}/tokens", json={"note": "by boss"}, headers=admin).json()
    assert client.get(f"{U}/tokens", headers=admin).json()["items"][-1]["created_by"] == "d1/boss"
    impostor = auth(made["token"])
    assert client.post(f"{U}/apps", json={}, headers=impostor).status_code == 202
    opened = client.post(f"{U}/apps/DetailedProfiler/default/presigned-url", headers=impostor)
    assert opened.status_code == 403 and "impersonation" in opened.json()["error"]["message"]
    # A token minted with that token inherits the impersonation.
    child = client.post(f"{U}/tokens", json={}, headers=impostor).json()["token"]
    assert (
        client.post(f"{U}/apps/DetailedProfiler/default/presigned-url", headers=auth(child)).status_code
        == 403
    )
    # Sign-in links the admin makes are impersonation too.
    assert client.post(f"{U}/presigned-url", headers=admin).json()["impersonated_by"] == "d1/boss"
    with seed.session() as session:
        domain = session.scalar(sa.select(Domain).where(Domain.name == "d1"))
        assert domain is not None
        domain.settings = {**(domain.settings or {}), "allow_impersonation": True}
        session.commit()
    client.app.state.services.token_cache.clear()
    assert (
        client.post(f"{U}/apps/DetailedProfiler/default/presigned-url", headers=impostor).status_code == 200
    )


def test_a_session_ends_with_its_token_and_mints_nothing_that_outlives_it(client: Any, seed: Any) -> None:
    # F2: a console session started with an expiring token ends when the token does (not 12 h
    # later), and a token it mints expires no later than the one it began with.
    token = seed.user_token("d1", "alice", expires_in_seconds=600)
    csrf = sign_in(client, token)
    headers = {**origin(client), "x-csrf-token": csrf}
    minted = client.post(f"{U}/tokens", json={"note": "lasting?"}, headers=headers)
    assert minted.status_code == 201, minted.text
    (mine,) = [t for t in client.get(f"{U}/tokens").json()["items"] if t["note"] == "seed"]
    assert minted.json()["expires_at"] is not None and minted.json()["expires_at"] <= mine["expires_at"]
    with seed.session() as session:  # the token's expiry passes (moved rather than waited for)
        past = datetime.now(UTC) - timedelta(seconds=1)
        session.execute(sa.update(ApiToken).where(ApiToken.id == mine["token_id"]).values(expires_at=past))
        session.commit()
    assert client.get("/api/v1/me").status_code == 401


def test_a_sign_in_link_never_silently_replaces_another_users_session(client: Any, seed: Any) -> None:
    # F7 (login CSRF): a page elsewhere navigates alice's signed-in browser to bob's link.
    sign_in(client, seed.user_token("d1", "alice"))
    seed.user("d1", "bob")
    made = client.post("/api/v1/domains/d1/users/bob/presigned-url", headers=auth(seed.admin_token))
    path = made.json()["url"].removeprefix(client.app.state.services.settings.public_url)
    asked = client.get(path, follow_redirects=False)
    assert asked.status_code == 200 and "Switch user?" in asked.text and "d1/bob" in asked.text
    assert client.get("/api/v1/me").json()["user"] == "alice"  # nothing changed, the link unspent
    form = {
        "signin": re.search(r'name="signin" value="([^"]+)"', asked.text).group(1),  # type: ignore[union-attr]
        "token": re.search(r'name="token" value="([^"]+)"', asked.text).group(1),  # type: ignore[union-attr]
    }
    forged = client.post("/console/presigned", data=form, headers={"origin": "https://evil.example"})
    assert forged.status_code == 403 and client.get("/api/v1/me").json()["user"] == "alice"
    switched = client.post("/console/presigned", data=form, headers=origin(client), follow_redirects=False)
    assert switched.status_code == 303 and client.get("/api/v1/me").json()["user"] == "bob"
    again = client.post("/api/v1/domains/d1/users/bob/presigned-url", headers=auth(seed.admin_token))
    own = client.get(
        again.json()["url"].removeprefix(client.app.state.services.settings.public_url),
        follow_redirects=False,
    )
    assert own.status_code == 303  # bob's own browser: no question asked
