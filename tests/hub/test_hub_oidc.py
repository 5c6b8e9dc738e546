"""OpenID Connect sign-in against a real provider on loopback (tests/support/oidc_provider.py),
driven over HTTP as a browser would: the hub's redirect to the provider, the provider's redirect
back, the callback. The browser-side story is in tests/e2e/test_e2e_oidc.py.

Who may sign in: whoever the provider vouches for, through a valid flow of *this* browser (state),
with a fresh ID token for this hub (nonce, audience, issuer, expiry, signature), whose domain claim
maps to a domain where they have a profile, or where the domain creates one on first sign-in.
Every sign-in and every refusal is audited.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import sqlalchemy as sa
from pydantic import SecretStr

from profilerhub_core.db.models import AuditEvent
from tests.support.hub import auth
from tests.support.oidc_provider import CLIENT_ID, CLIENT_SECRET, TestOpenIDProvider

DOMAIN_MAP = {"ml-team": "ml"}


@pytest.fixture(scope="module")
def provider() -> Iterator[TestOpenIDProvider]:
    provider = TestOpenIDProvider.start()
    yield provider
    provider.stop()


def oidc_settings(base: Any, provider: TestOpenIDProvider, **extra: Any) -> Any:
    return base.model_copy(
        update={
            "oidc_issuer": provider.issuer,
            "oidc_client_id": CLIENT_ID,
            "oidc_client_secret": SecretStr(CLIENT_SECRET),
            "oidc_provider_name": "Test provider",
            "oidc_domain_claim": "groups",
            "oidc_domain_map": DOMAIN_MAP,
            **extra,
        }
    )


@pytest.fixture
def oidc_client(hub_settings: Any, hub_app: Any, provider: TestOpenIDProvider) -> Iterator[Any]:
    """A TestClient on a hub configured for the provider (its own app, on the shared database)."""
    from fastapi.testclient import TestClient

    from profilerhub_hub.main import create_app

    settings = oidc_settings(hub_settings, provider)
    provider.redirect_uris = {settings.public_url + "/console/oidc/callback"}
    provider.misbehave, provider.refusals = None, []
    app = create_app(settings, engine=hub_app.state.services.engine)
    with TestClient(app) as client:
        yield client


def begin(client: Any) -> str:
    """Start a sign-in; return the provider's authorization URL."""
    answer = client.get("/console/oidc/sign-in", follow_redirects=False)
    assert answer.status_code == 303, answer.text
    assert "profilerhub_oidc" in client.cookies
    return str(answer.headers["location"])


def through_provider(authorize_url: str) -> str:
    """What the provider redirects the browser back to (path and query on the hub)."""
    answer = httpx.get(authorize_url, follow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    back = urlsplit(answer.headers["location"])
    return f"{back.path}?{back.query}"


def sign_in(client: Any, provider: TestOpenIDProvider, claims: dict[str, Any]) -> Any:
    provider.next_claims = claims
    return client.get(through_provider(begin(client)), follow_redirects=False)


def oidc_audit(seed: Any) -> list[AuditEvent]:
    with seed.session() as session:
        events = session.scalars(sa.select(AuditEvent).order_by(AuditEvent.id)).all()
        return [e for e in events if (e.detail or {}).get("via") == "oidc"]


ALICE = {"preferred_username": "alice", "groups": ["staff", "ml-team"]}


def test_sign_in_page_offers_the_provider_and_the_flow_carries_state_nonce_and_pkce(
    oidc_client: Any, provider: TestOpenIDProvider
) -> None:
    page = oidc_client.get("/console/sign-in")
    assert "Sign in with Test provider" in page.text and 'href="/console/oidc/sign-in"' in page.text
    url = urlsplit(begin(oidc_client))
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{provider.issuer}/authorize"
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert query["state"] and query["nonce"] and "openid" in query["scope"].split()
    # The flow's secrets (the verifier above all) are in the browser's cookie, never in the URL.
    assert "code_verifier" not in url.query
    cookie = next(c for c in oidc_client.cookies.jar if c.name == "profilerhub_oidc")
    assert cookie.path == "/console/oidc/" and cookie.has_nonstandard_attr("HttpOnly")


def test_good_sign_in_starts_a_session_for_the_mapped_user(
    oidc_client: Any, provider: TestOpenIDProvider, seed: Any
) -> None:
    seed.user("ml", "alice")
    answer = sign_in(oidc_client, provider, ALICE)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/", answer.text
    assert "profilerhub_oidc" not in oidc_client.cookies  # the flow is finished
    me = oidc_client.get("/api/v1/me").json()
    assert (me["domain"], me["user"], me["role"]) == ("ml", "alice", "user")
    assert provider.refusals == []  # the provider found the PKCE verifier, client secret, code all right
    (event,) = oidc_audit(seed)
    assert (event.action, event.outcome, event.actor) == ("SignIn", "success", "ml/alice")
    assert event.detail["subject"] == "sub-alice"


def test_unknown_user_is_refused_unless_the_domain_creates_users(
    oidc_client: Any, provider: TestOpenIDProvider, seed: Any
) -> None:
    seed.domain("ml")
    answer = sign_in(oidc_client, provider, {"preferred_username": "bob", "groups": "ml-team"})
    assert (
        answer.status_code == 403
        and "There is no user &#x27;bob&#x27; in domain &#x27;ml&#x27;" in answer.text
    )
    assert oidc_client.get("/api/v1/me").status_code == 401
    patched = oidc_client.patch(
        "/api/v1/domains/ml",
        json={"settings": {"create_users_on_sign_in": True}},
        headers=auth(seed.admin_token),
    )
    assert patched.status_code == 200 and patched.json()["settings"]["create_users_on_sign_in"] is True
    answer = sign_in(oidc_client, provider, {"preferred_username": "bob", "groups": "ml-team"})
    assert answer.status_code == 303, answer.text
    me = oidc_client.get("/api/v1/me").json()
    assert (me["domain"], me["user"], me["role"]) == ("ml", "bob", "user")
    events = [(e.action, e.outcome, e.detail.get("reason")) for e in oidc_audit(seed)]
    assert events == [
        ("SignIn", "denied", "unknown user"),
        ("CreateUserProfile", "success", None),
        ("SignIn", "success", None),
    ]


def test_claims_that_map_to_no_domain_or_no_valid_name_are_refused(
    oidc_client: Any, provider: TestOpenIDProvider, seed: Any
) -> None:
    seed.user("ml", "alice")
    answer = sign_in(oidc_client, provider, {"preferred_username": "alice", "groups": ["sales"]})
    assert answer.status_code == 403 and "belongs to no domain" in answer.text
    answer = sign_in(oidc_client, provider, {"preferred_username": "al ice", "groups": ["ml-team"]})
    assert answer.status_code == 401 and "not a valid user name" in answer.text
    assert [e.outcome for e in oidc_audit(seed)] == ["denied", "denied"]


@pytest.mark.parametrize(
    ("misbehave", "reason"),
    [
        ("wrong_state", "state mismatch"),
        ("wrong_nonce", "nonce mismatch"),
        ("wrong_audience", "ID token refused: invalid_claim: Invalid claim: 'aud'"),
        ("wrong_issuer", "ID token refused: invalid_claim: Invalid claim: 'iss'"),
        ("expired", "ID token expired"),
        ("foreign_key", "ID token not verified: bad_signature"),
    ],
)
def test_a_provider_answer_that_fails_a_check_signs_nobody_in(
    oidc_client: Any, provider: TestOpenIDProvider, seed: Any, misbehave: str, reason: str
) -> None:
    seed.user("ml", "alice")
    provider.misbehave = misbehave
    answer = sign_in(oidc_client, provider, ALICE)
    assert answer.status_code == 401, answer.text
    assert "profilerhub_console" not in answer.headers.get("set-cookie", "")
    assert oidc_client.get("/api/v1/me").status_code == 401
    (event,) = oidc_audit(seed)
    assert (event.action, event.outcome) == ("SignIn", "denied")
    assert event.detail["reason"].startswith(reason), event.detail


def test_a_callback_without_this_browsers_flow_or_replayed_is_refused(
    oidc_client: Any, provider: TestOpenIDProvider, seed: Any, hub_settings: Any
) -> None:
    from fastapi.testclient import TestClient

    seed.user("ml", "alice")
    provider.next_claims = ALICE
    back = through_provider(begin(oidc_client))
    # Another browser (no flow cookie) handed the same redirect: login CSRF, refused.
    with TestClient(oidc_client.app) as other:
        answer = other.get(back, follow_redirects=False)
        assert answer.status_code == 401 and "not started from this browser" in answer.text
    assert oidc_client.get(back, follow_redirects=False).status_code == 303
    # The same redirect again: the flow is gone (and the provider would refuse the used code).
    assert oidc_client.get(back, follow_redirects=False).status_code == 401
    # The provider saying no is shown and audited, not a 500.
    answer = oidc_client.get("/console/oidc/callback?error=access_denied&state=x", follow_redirects=False)
    assert answer.status_code == 401
    reasons = [e.detail["reason"] for e in oidc_audit(seed) if e.outcome == "denied"]
    assert reasons == [
        "no sign-in in progress in this browser",
        "no sign-in in progress in this browser",
        "no sign-in in progress in this browser",
    ]


def test_an_answer_naming_another_issuer_is_refused_before_its_code_is_sent(
    oidc_client: Any, provider: TestOpenIDProvider, seed: Any
) -> None:
    """RFC 9207's mix-up defence: the callback's ``iss`` must be the configured issuer."""
    seed.user("ml", "alice")
    provider.next_claims = ALICE
    back, exchanges = through_provider(begin(oidc_client)), provider.token_requests
    answer = oidc_client.get(back + "&iss=http%3A%2F%2Fother-provider.example", follow_redirects=False)
    assert answer.status_code == 401 and "did not come from this hub" in answer.text
    assert provider.token_requests == exchanges
    (event,) = oidc_audit(seed)
    assert event.detail["reason"].startswith("authorization response issuer 'http://other-provider.example'")


def test_pkce_verifier_is_what_the_provider_checks(
    oidc_client: Any, provider: TestOpenIDProvider, seed: Any
) -> None:
    """A stolen code is useless without this browser's verifier: the provider refuses the exchange."""
    seed.user("ml", "alice")
    provider.next_claims = ALICE
    back = through_provider(begin(oidc_client))
    code = parse_qs(urlsplit(back).query)["code"][0]
    grant = provider.grants[code]
    grant.challenge = "not-the-challenge-of-this-verifier"
    answer = oidc_client.get(back, follow_redirects=False)
    assert answer.status_code == 401
    assert provider.refusals == ["token: PKCE verifier does not match the challenge"]


def test_oidc_routes_answer_404_when_not_configured(client: Any) -> None:
    assert "Sign in with" not in client.get("/console/sign-in").text
    answer = client.get("/console/oidc/sign-in", follow_redirects=False)
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "ResourceNotFound"


def test_settings_need_a_client_id_with_an_issuer() -> None:
    from pydantic import ValidationError

    from profilerhub_core.settings import Settings

    with pytest.raises(ValidationError, match="OIDC_CLIENT_ID"):
        Settings(oidc_issuer="https://id.example")


def test_what_an_openid_session_opens_ends_with_it(
    oidc_client: Any, provider: TestOpenIDProvider, seed: Any
) -> None:
    # Lineage with an OpenID root (no token): the app session and the link made in the console
    # session die when it signs out; "sign out everywhere" voids what a later session made.
    seed.user("ml", "alice")
    assert sign_in(oidc_client, provider, ALICE).status_code == 303
    page = oidc_client.get("/console/")
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    browser = {"origin": oidc_client.app.state.services.settings.public_url, "x-csrf-token": csrf}
    me = "/api/v1/domains/ml/users/alice"
    made = oidc_client.post(f"{me}/apps", json={"app_type": "DetailedProfiler"}, headers=browser)
    assert made.status_code == 202, made.text
    app_id, prefix = made.json()["app_id"], oidc_client.app.state.services.settings.public_url
    app_url = oidc_client.post(f"{me}/apps/DetailedProfiler/default/presigned-url", headers=browser).json()[
        "url"
    ]
    link = oidc_client.post(f"{me}/presigned-url", headers=browser).json()["url"].removeprefix(prefix)
    opened = oidc_client.get(app_url.removeprefix(prefix), follow_redirects=False)
    assert opened.status_code == 303
    assert oidc_client.get(f"/apps/{app_id}/").status_code == 503  # its cookie let it through
    signed_out = oidc_client.post(
        "/console/sign-out", data={"csrf": csrf}, headers=browser, follow_redirects=False
    )
    assert signed_out.status_code == 303
    assert oidc_client.get(f"/apps/{app_id}/").status_code == 401
    oidc_client.cookies.clear()
    refused = oidc_client.get(link, follow_redirects=False)
    assert refused.status_code == 401 and "has ended" in refused.text
