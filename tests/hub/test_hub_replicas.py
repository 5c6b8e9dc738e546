"""Hub replicas are interchangeable: two real ``profilerhub hub`` processes, each on its own port,
on one PostgreSQL and one Redis (docs/operations.md#several-hub-processes).

Each process trusts a verified token for a minute here (``TOKEN_CACHE_SECONDS=60``), so a
revocation that shows on the other replica at once is the shared epoch's doing, not the clock's.

The session-revocation matrix (``test_every_session_descended_from_a_credential_ends_with_it``)
runs on this one pair: for every kind of credential (a token, an access key, a password) and
every way of revoking it (revoking or expiring it, "sign out everywhere", a password reset,
deleting the user), every kind of session and token descended from it, made through either
replica, answers 401 on both afterwards, and every link made with it and not yet opened is
refused.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import boto3
import httpx
import pytest
import sqlalchemy as sa
import testservices
from botocore.config import Config
from sqlalchemy.orm import Session

from profilerhub_core.db.models import ApiToken, AppStatus, utcnow
from profilerhub_core.db.session import make_engine
from profilerhub_core.records import app_states
from tests.support.hub import TEST_SECRET_KEY, RunningHub, auth, migrate, start_profilerhub
from tests.support.lineage import APP_COOKIE, CONSOLE_COOKIE, Browser, cookies_set, path_of

ADMIN = "replica-admin-token-0123456789abcdef"
GUESSER = "127.0.0.2"
pytestmark = pytest.mark.slow


PUBLIC_URL = "http://hub.test"


@dataclass
class Replicas:
    a: RunningHub
    b: RunningHub
    database: str
    engine: Any = None  # made on first use (_db), disposed with the pair

    def api(self, hub: RunningHub, token: str = ADMIN) -> httpx.Client:
        return httpx.Client(base_url=f"{hub.url}/api/v1", headers=auth(token), timeout=30)


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory, postgres_url: str, redis_url: str
) -> Iterator[Replicas]:

    tmp = tmp_path_factory.mktemp("replicas")
    database = testservices.create_database(postgres_url)
    env = {
        "PROFILERHUB_SECRET_KEY": TEST_SECRET_KEY,
        "PROFILERHUB_ADMIN_TOKEN": ADMIN,
        "PROFILERHUB_REDIS_URL": redis_url,
        "PROFILERHUB_CELERY_QUEUE": f"replicas-{uuid.uuid4().hex[:8]}",
        "PROFILERHUB_HUB_WORKERS": "1",
        "PROFILERHUB_TOKEN_CACHE_SECONDS": "60",
        "PROFILERHUB_RATE_LIMIT_TOKEN_FAILURES": "3",
        "PROFILERHUB_RATE_LIMIT_WINDOW_SECONDS": "3600",  # no window ends while the module runs
        "PROFILERHUB_PUBLIC_URL": PUBLIC_URL,  # what the console's Origin checks compare with
    }
    migrate(database, tmp)
    started: list[RunningHub] = []
    try:
        for name in ("a", "b"):
            started.append(
                start_profilerhub(
                    "hub", home=tmp / name, log=tmp / f"{name}.log", database_url=database, env=env
                )
            )
        pair = Replicas(*started, database)
        yield pair
        if pair.engine is not None:
            pair.engine.dispose()
    finally:
        for hub in started:
            hub.stop()
        testservices.drop_database(database)


def new_user(replicas: Replicas, domain: str, user: str) -> str:
    """A user made through replica a, and a token of theirs."""
    with replicas.api(replicas.a) as api:
        assert api.post("/domains", json={"name": domain}).status_code in (201, 409)
        assert api.post(f"/domains/{domain}/users", json={"name": user}).status_code == 201
        answer = api.post(f"/domains/{domain}/users/{user}/tokens", json={"note": "replicas"})
        assert answer.status_code == 201, answer.text
        return str(answer.json()["token"])


def test_a_token_revoked_through_one_replica_is_refused_by_the_other_at_once(replicas: Replicas) -> None:
    token = new_user(replicas, "rep", "alice")
    with replicas.api(replicas.b, token) as on_b:
        assert on_b.get("/me").status_code == 200  # b has verified (and cached) it
        assert on_b.get("/me").status_code == 200
        with replicas.api(replicas.a) as admin_on_a:
            (item,) = admin_on_a.get("/domains/rep/users/alice/tokens").json()["items"]
            assert admin_on_a.delete(f"/domains/rep/users/alice/tokens/{item['token_id']}").status_code == 204
        answer = on_b.get("/me")
        assert answer.status_code == 401, answer.text


def test_a_deleted_user_is_refused_by_the_other_replica_at_once(replicas: Replicas) -> None:
    token = new_user(replicas, "rep", "bob")
    with replicas.api(replicas.b, token) as on_b:
        assert on_b.get("/me").status_code == 200
        with replicas.api(replicas.a) as admin_on_a:
            assert admin_on_a.delete("/domains/rep/users/bob").status_code == 204
        assert on_b.get("/me").status_code == 401


def _link(replicas: Replicas, user: str) -> str:
    with replicas.api(replicas.a) as api:
        answer = api.post(f"/domains/rep/users/{user}/presigned-url", json={})
        assert answer.status_code == 200, answer.text
        url = str(answer.json()["url"])
    return url[url.index("/console/") :]  # the path: either replica may redeem it


def test_a_presigned_link_is_single_use_across_replicas_and_its_session_valid_on_both(
    replicas: Replicas,
) -> None:
    new_user(replicas, "rep", "carol")
    path = _link(replicas, "carol")
    first = httpx.get(f"{replicas.b.url}{path}", follow_redirects=False, timeout=30)
    assert first.status_code == 303, first.text
    again = httpx.get(f"{replicas.a.url}{path}", follow_redirects=False, timeout=30)
    assert again.status_code == 401 and "already used" in again.text
    cookie = re.search(r"profilerhub_console=([^;]+)", first.headers["set-cookie"])
    assert cookie
    cookies = {"profilerhub_console": cookie.group(1)}
    for hub in (replicas.a, replicas.b):
        me = httpx.get(f"{hub.url}/api/v1/me", cookies=cookies, timeout=30)
        assert me.status_code == 200 and me.json()["user"] == "carol"
    # Ending her sessions through one replica ends them on the other.
    with replicas.api(replicas.a) as api:
        assert api.delete("/domains/rep/users/carol/tokens").status_code == 204
    assert httpx.get(f"{replicas.b.url}/api/v1/me", cookies=cookies, timeout=30).status_code == 401


def test_failed_token_checks_are_counted_across_replicas(replicas: Replicas) -> None:
    # From an address of its own (the other tests' refusals come from 127.0.0.1).
    guesser = httpx.Client(transport=httpx.HTTPTransport(local_address=GUESSER), timeout=30)
    statuses: list[int] = []
    with guesser:
        for hub in (replicas.a, replicas.b, replicas.a, replicas.b, replicas.a):
            answer = guesser.get(f"{hub.url}/api/v1/me", headers=auth("phk_guessing"))
            statuses.append(answer.status_code)
        assert statuses == [401, 401, 401, 429, 429]
        assert int(answer.headers["retry-after"]) > 60
        assert answer.json()["error"]["code"] == "ThrottlingException"
        # Bad tokens are throttled from that address on both replicas now; valid ones are not (F5).
        token = new_user(replicas, "rep", "dave")
        assert guesser.get(f"{replicas.a.url}/api/v1/me", headers=auth("phk_guess-2")).status_code == 429
        assert guesser.get(f"{replicas.b.url}/api/v1/me", headers=auth(token)).status_code == 200
    with replicas.api(replicas.a) as api:
        events = api.get("/audit", params={"action": "RateLimited"}).json()["items"]
    assert [e["target"] for e in events] == [GUESSER]


# -- the session-revocation matrix ----------------------------------------------------------------

APP_URL = "/apps/DetailedProfiler/default/presigned-url"
_addresses = itertools.count(1)
# Each bearer check from an address of its own: a case's revoked tokens are more than the failed
# checks an address may make before its bad tokens answer 429 (RATE_LIMIT_TOKEN_FAILURES=3).
_bearer_addresses = itertools.count(1)


@dataclass
class Family:
    """A root credential of ``user`` and what descends from it: console and app sessions (cookie
    values, by how they were got), tokens minted from it, and links made but not opened yet (paths)."""

    user: str
    app_id: str
    consoles: dict[str, str] = field(default_factory=dict)
    apps: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    token_id: str = ""


def _browsers(replicas: Replicas) -> tuple[Browser, Browser]:
    address = f"127.0.1.{next(_addresses)}"  # the case's refusals count toward its own limits
    return Browser(replicas.a.url, PUBLIC_URL, address), Browser(replicas.b.url, PUBLIC_URL, address)


def _db(replicas: Replicas) -> Session:
    """A session on the replicas' database, for what a worker (or the clock) would do."""
    if replicas.engine is None:
        replicas.engine = make_engine(replicas.database)
    return Session(replicas.engine)


def _user_with_app(replicas: Replicas, user: str) -> str:
    """``user`` in the domain ``lineage`` (impersonation allowed: the admin makes the credentials),
    with a profiler app InService at an address nothing answers on (the proxy then says 503)."""
    with replicas.api(replicas.a) as api:
        if api.post("/domains", json={"name": "lineage"}).status_code == 201:
            allow = {"settings": {"allow_impersonation": True}}
            assert api.patch("/domains/lineage", json=allow).status_code == 200
        assert api.post("/domains/lineage/users", json={"name": user}).status_code == 201
        answer = api.post(f"/domains/lineage/users/{user}/apps", json={"app_type": "DetailedProfiler"})
        assert answer.status_code == 202, answer.text
        app_id = str(answer.json()["app_id"])
    with _db(replicas) as session:  # as the worker would, once the app answers
        assert app_states.transition(session, app_id, AppStatus.Pending, AppStatus.InService,
                                     endpoint="http://127.0.0.1:9")  # fmt: skip
        session.commit()
    return app_id


def _post(replicas: Replicas, hub: RunningHub, token: str, path: str, body: dict[str, object]) -> str:
    with replicas.api(hub, token) as api:
        answer = api.post(path, json=body)
    assert answer.status_code == 200, answer.text
    return path_of(str(answer.json()["url"]))


def token_family(replicas: Replicas, user: str, a: Browser, b: Browser) -> tuple[Family, str]:
    """A token of ``user`` and every kind of session and link descended from it, through both
    replicas: the token's own console session, links made with it (console, console landing in
    the app, the app's presigned URL), and links made in that console session."""
    family = Family(user, _user_with_app(replicas, user))
    me = f"/domains/lineage/users/{user}"
    with replicas.api(replicas.a) as api:
        made = api.post(f"{me}/tokens", json={"expires_in_seconds": 3600}).json()
    token, family.token_id = made["token"], made["token_id"]
    family.consoles["token form"] = a.console_session(token)
    family.consoles["sign-in link"] = b.redeemed(
        _post(replicas, replicas.a, token, f"{me}/presigned-url", {})
    )[CONSOLE_COOKIE]
    landed = b.redeemed(_post(replicas, replicas.b, token, f"{me}/presigned-url", {"landing": "app"}))
    family.consoles["sign-in link to the app"], family.apps["sign-in link to the app"] = (
        landed[CONSOLE_COOKIE], landed[APP_COOKIE]
    )  # fmt: skip
    family.apps["app URL"] = a.redeemed(_post(replicas, replicas.b, token, me + APP_URL, {}))[APP_COOKIE]
    console = family.consoles["token form"]
    in_session = b.console_post(console, f"{me}/presigned-url", {})
    assert in_session.status_code == 200, in_session.text
    family.consoles["link made in a session"] = a.redeemed(path_of(in_session.json()["url"]))[CONSOLE_COOKIE]
    in_session = a.console_post(console, me + APP_URL, {})
    assert in_session.status_code == 200, in_session.text
    family.apps["app URL made in a session"] = b.redeemed(path_of(in_session.json()["url"]))[APP_COOKIE]
    family.links["sign-in link"] = _post(replicas, replicas.a, token, f"{me}/presigned-url", {})
    family.links["app URL"] = _post(replicas, replicas.a, token, me + APP_URL, {})
    family.links["link made in a session"] = path_of(
        b.console_post(console, f"{me}/presigned-url", {}).json()["url"]
    )
    family.links["app URL made in a session"] = path_of(
        a.console_post(console, me + APP_URL, {}).json()["url"]
    )
    return family, token


def key_family(replicas: Replicas, user: str, a: Browser, b: Browser) -> tuple[Family, str]:
    """An access key of ``user`` and the app sessions and links CreatePresignedDomainUrl makes with it."""
    family = Family(user, _user_with_app(replicas, user))
    with replicas.api(replicas.a) as api:
        made = api.post(f"/domains/lineage/users/{user}/access-keys", json={}).json()
    family.token_id = made["access_key_id"]
    client = boto3.client(
        "sagemaker", endpoint_url=f"{replicas.b.url}/sagemaker", region_name="us-east-1",
        aws_access_key_id=made["access_key_id"], aws_secret_access_key=made["secret_access_key"],
        config=Config(retries={"max_attempts": 1}),
    )  # fmt: skip

    (domain_id,) = [d["DomainId"] for d in client.list_domains()["Domains"] if d["DomainName"] == "lineage"]

    def presigned() -> str:
        return path_of(
            client.create_presigned_domain_url(DomainId=domain_id, UserProfileName=user)["AuthorizedUrl"]
        )

    family.apps["CreatePresignedDomainUrl"] = a.redeemed(presigned())[APP_COOKIE]
    family.links["CreatePresignedDomainUrl"] = presigned()
    return family, str(made["secret_access_key"])


PASSWORD = "granite-lantern-orchard-58"


def password_family(replicas: Replicas, user: str, a: Browser, b: Browser) -> tuple[Family, str]:
    """``user``'s password (an invitation accepted) and what descends from it, through both
    replicas: password sign-ins on the console form, links made in such a session, a token made in
    it and the console session started with that token, the token ``profilerhub login`` gets
    (``/sign-in/password``) with a session and an app link of its own."""
    family = Family(user, _user_with_app(replicas, user))
    me = f"/domains/lineage/users/{user}"
    with replicas.api(replicas.a) as api:
        invited = api.post(f"{me}/invitations", json={}).json()
    with httpx.Client(base_url=f"{replicas.b.url}/api/v1", timeout=30) as anonymous:
        body = {"invitation": invited["url"], "password": PASSWORD}
        accepted = anonymous.post("/sign-in/invitation", json=body)
        assert accepted.status_code == 201, accepted.text
        body = {"domain": "lineage", "user": user, "password": PASSWORD, "note": "profilerhub login"}
        login = anonymous.post("/sign-in/password", json=body)
        assert login.status_code == 201, login.text
    family.tokens["the invitation used from a terminal"] = accepted.json()["token"]
    family.tokens["profilerhub login"] = login_token = login.json()["token"]
    console = family.consoles["password sign-in"] = a.password_session("lineage", user, PASSWORD)
    family.consoles["password sign-in on the other replica"] = b.password_session("lineage", user, PASSWORD)

    def made_in_session(browser: Browser, path: str) -> str:
        answer = browser.console_post(console, path, {})
        assert answer.status_code == 200, answer.text
        return path_of(answer.json()["url"])

    link = made_in_session(b, f"{me}/presigned-url")
    family.consoles["link made in a password session"] = a.redeemed(link)[CONSOLE_COOKIE]
    app_link = made_in_session(a, me + APP_URL)
    family.apps["app URL made in a password session"] = b.redeemed(app_link)[APP_COOKIE]
    minted = b.console_post(console, f"{me}/tokens", {"note": "made in a password session"})
    assert minted.status_code == 201, minted.text
    family.tokens["made in a password session"] = minted.json()["token"]
    family.consoles["token made in a password session"] = a.console_session(minted.json()["token"])
    family.consoles["profilerhub login's token"] = b.console_session(login_token)
    family.apps["app URL made with profilerhub login's token"] = a.redeemed(
        _post(replicas, replicas.b, login_token, me + APP_URL, {})
    )[APP_COOKIE]
    family.links["link made in a password session"] = made_in_session(a, f"{me}/presigned-url")
    family.links["app URL made with profilerhub login's token"] = _post(
        replicas, replicas.a, login_token, me + APP_URL, {}
    )
    return family, PASSWORD


def revoke(replicas: Replicas, family: Family, how: str) -> None:
    """End ``family``'s root credential ``how``, through replica b (the sessions were made on both)."""
    me = f"/domains/lineage/users/{family.user}"
    with replicas.api(replicas.b) as api:
        if how == "revoke":
            kind = "access-keys" if family.token_id.startswith("PHAK") else "tokens"
            assert api.delete(f"{me}/{kind}/{family.token_id}").status_code == 204
        elif how == "sign out everywhere":
            assert api.delete(f"{me}/tokens").status_code == 204
        elif how == "password reset":  # an administrator's new invitation
            reset = api.post(f"{me}/invitations", json={})
            assert reset.status_code == 201 and reset.json()["reset"], reset.text
            assert reset.json()["tokens_revoked"] == len(family.tokens)
        elif how == "delete the user":
            with _db(replicas) as session:  # a user with a live app cannot be deleted: as the worker would
                app_states.transition(session, family.app_id, AppStatus.InService, AppStatus.Deleting)
                app_states.transition(session, family.app_id, AppStatus.Deleting, AppStatus.Deleted)
                session.commit()
            assert api.delete(me).status_code == 204
        else:  # "expiry": the token's expires_at passes (moved, rather than waited for)
            assert how == "expiry"
            with _db(replicas) as session:
                past = utcnow() - timedelta(seconds=1)
                session.execute(
                    sa.update(ApiToken).where(ApiToken.id == family.token_id).values(expires_at=past)
                )
                session.commit()


def statuses(family: Family, a: Browser, b: Browser) -> dict[str, int]:
    """What each descendant answers now, on each replica (console and bearer: /api/v1/me; app:
    the proxy)."""
    seen = {}
    for browser, name in ((a, "a"), (b, "b")):
        for kind, token in family.tokens.items():
            alone = Browser(browser.url, browser.public_url, f"127.0.2.{next(_bearer_addresses)}")
            seen[f"bearer token from {kind} on {name}"] = alone.bearer_status(token)
        for kind, cookie in family.consoles.items():
            seen[f"console session from {kind} on {name}"] = browser.console_status(cookie)
        for kind, cookie in family.apps.items():
            seen[f"app session from {kind} on {name}"] = browser.app_status(family.app_id, cookie)
    return seen


REVOCATIONS = {
    "token": (token_family, ["revoke", "sign out everywhere", "expiry", "delete the user"]),
    "access-key": (key_family, ["revoke", "sign out everywhere", "delete the user"]),
    "password": (password_family, ["password reset", "sign out everywhere", "delete the user"]),
}
CASES = [
    pytest.param(make, how, id=f"{root}-{how.replace(' ', '-')}")
    for root, (make, ways) in REVOCATIONS.items()
    for how in ways
]


@pytest.mark.parametrize(("make", "how"), CASES)
def test_every_session_descended_from_a_credential_ends_with_it(
    replicas: Replicas, make: Any, how: str
) -> None:
    a, b = _browsers(replicas)
    user = f"u{uuid.uuid4().hex[:10]}"
    family, _ = make(replicas, user, a, b)
    before = statuses(family, a, b)
    # the app's endpoint answers nothing: the proxy let it through
    live = {"console": 200, "app": 503, "bearer": 200}
    assert before == {k: live[k.split()[0]] for k in before}, before
    revoke(replicas, family, how)
    after = statuses(family, a, b)
    assert after == dict.fromkeys(after, 401), after
    refused = {401, 404} if how == "delete the user" else {401}  # a deleted user's app link: 404
    for kind, path in family.links.items():
        for browser in (a, b):
            answer = browser.redeem(path)
            started = {CONSOLE_COOKIE, APP_COOKIE} & set(cookies_set(answer))
            assert answer.status_code in refused and not started, (kind, answer.status_code, answer.text)


def test_an_access_key_secret_is_neither_a_bearer_token_nor_a_console_sign_in(replicas: Replicas) -> None:
    a, b = _browsers(replicas)
    family, secret = key_family(replicas, f"u{uuid.uuid4().hex[:10]}", a, b)  # b verified it (SigV4)
    for hub, browser in ((replicas.a, a), (replicas.b, b)):
        transport = httpx.HTTPTransport(local_address=browser.address)
        with httpx.Client(base_url=hub.url, transport=transport, timeout=30) as client:
            answer = client.get("/api/v1/me", headers=auth(secret))
        assert answer.status_code == 401 and "access key" in answer.text, answer.text
        signed_in = browser.sign_in_with_token(secret)
        assert signed_in.status_code == 401 and CONSOLE_COOKIE not in cookies_set(signed_in)
