"""Hub replicas are interchangeable: two real ``profilerhub hub`` processes, each on its own port,
on one PostgreSQL and one Redis (docs/operations.md#several-hub-processes).

Each process trusts a verified token for a minute here (``TOKEN_CACHE_SECONDS=60``), so a
revocation that shows on the other replica at once is the shared epoch's doing, not the clock's.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import testservices

from tests.support.hub import TEST_SECRET_KEY, RunningHub, auth, migrate, start_profilerhub

ADMIN = "replica-admin-token-0123456789abcdef"
GUESSER = "127.0.0.2"
pytestmark = pytest.mark.slow


@dataclass
class Replicas:
    a: RunningHub
    b: RunningHub

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
        yield Replicas(*started)
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
        # Any token not already verified is refused from that address on both replicas now.
        token = new_user(replicas, "rep", "dave")
        assert guesser.get(f"{replicas.b.url}/api/v1/me", headers=auth(token)).status_code == 429
    assert httpx.get(f"{replicas.b.url}/api/v1/me", headers=auth(token), timeout=30).status_code == 200
    with replicas.api(replicas.a) as api:
        events = api.get("/audit", params={"action": "RateLimited"}).json()["items"]
    assert [e["target"] for e in events] == [GUESSER]
