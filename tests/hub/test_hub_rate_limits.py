"""Rate limits on sign-in attempts, presigned-link redemptions and failed token checks: 429 with
``Retry-After`` in the error shape, counted per client address, shared by every hub process on one
Redis (here: two hub apps on a real Redis), counted per process without one, audited once per
window. Real spawned replicas: tests/hub/test_hub_replicas.py.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from profilerhub_core.db.models import AuditEvent
from tests.support.hub import auth

LIMITS = {"rate_limit_signin": 3, "rate_limit_presigned": 2, "rate_limit_token_failures": 2}


@pytest.fixture
def limited(hub_settings: Any, hub_app: Any) -> Iterator[Callable[..., Any]]:
    """``limited(**settings)``: a TestClient on a hub with low limits (its own app, same database)."""
    from fastapi.testclient import TestClient

    from profilerhub_hub.main import create_app

    clients: list[Any] = []

    def make(**extra: Any) -> Any:
        settings = hub_settings.model_copy(update={**LIMITS, **extra})
        client = TestClient(create_app(settings, engine=hub_app.state.services.engine))
        clients.append(client.__enter__())
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def assert_throttled(answer: Any, message: str) -> None:
    assert answer.status_code == 429, answer.text
    assert 1 <= int(answer.headers["retry-after"]) <= 60
    error = answer.json()["error"]
    assert error["code"] == "ThrottlingException" and message in error["message"]


def rate_limited_events(seed: Any) -> list[AuditEvent]:
    with seed.session() as session:
        return list(session.scalars(sa.select(AuditEvent).where(AuditEvent.action == "RateLimited")))


def signin_form(client: Any) -> dict[str, str]:
    match = re.search(r'name="signin" value="([^"]+)"', client.get("/console/sign-in").text)
    assert match
    return {"signin": match.group(1), "token": "phk_not-a-token"}


def test_sign_in_attempts_past_the_limit_get_429_and_one_audit_event(limited: Any, seed: Any) -> None:
    client = limited()
    form, origin = signin_form(client), {"origin": client.app.state.services.settings.public_url}
    for _ in range(3):
        assert client.post("/console/sign-in", data=form, headers=origin).status_code == 401
    for _ in range(2):
        assert_throttled(client.post("/console/sign-in", data=form, headers=origin), "sign-in attempts")
    (event,) = rate_limited_events(seed)
    assert (event.target_type, event.target, event.outcome) == ("Client", "testclient", "denied")
    assert event.detail["limit"] == "signin"


def test_failed_token_checks_past_the_limit_throttle_bad_tokens_and_never_valid_ones(
    limited: Any, seed: Any
) -> None:
    client = limited(token_cache_seconds=60)  # "a moment ago" however loaded the machine is
    known = seed.user_token("d1", "alice")
    assert client.get("/api/v1/me", headers=auth(known)).status_code == 200  # now cached
    for _ in range(2):
        assert client.get("/api/v1/me", headers=auth("phk_guess")).status_code == 401
    assert_throttled(client.get("/api/v1/me", headers=auth("phk_guess")), "failed token checks")
    # F5: valid tokens from that address still work (one NAT address must not lock out a team),
    # a platform administrator's never seen before included; bad ones stay throttled.
    assert client.get("/api/v1/me", headers=auth(known)).status_code == 200
    assert client.get("/api/v1/me", headers=auth(seed.user_token("d1", "bob"))).status_code == 200
    admin = seed.token("system", "admin")  # a platform administrator's, never used before
    assert client.get("/api/v1/domains", headers=auth(admin)).status_code == 200
    assert_throttled(client.get("/api/v1/me", headers=auth("phk_guess-again")), "failed token checks")
    # The app proxy counts the same failures.
    assert_throttled(client.get("/apps/nope/", headers=auth("phk_guess")), "failed token checks")
    assert [e.detail["limit"] for e in rate_limited_events(seed)] == ["token-failures"]


def test_presigned_link_redemptions_past_the_limit_get_429(limited: Any) -> None:
    client = limited()
    for _ in range(2):
        assert client.get("/console/presigned?token=forged", follow_redirects=False).status_code == 401
    assert_throttled(client.get("/console/presigned?token=forged"), "sign-in links")
    assert_throttled(client.get("/apps/some-app/_hub/login?token=forged"), "sign-in links")


def test_hub_processes_on_one_redis_count_together(limited: Any, redis_url: str) -> None:
    shared = {"redis_url": redis_url, "celery_queue": f"test-{uuid.uuid4().hex[:12]}"}
    first, second = limited(**shared), limited(**shared)
    assert first.get("/api/v1/me", headers=auth("phk_guess")).status_code == 401
    assert second.get("/api/v1/me", headers=auth("phk_guess")).status_code == 401
    assert_throttled(first.get("/api/v1/me", headers=auth("phk_guess")), "failed token checks")
    assert_throttled(second.get("/api/v1/me", headers=auth("phk_guess")), "failed token checks")
    # Without a shared Redis each process counts alone.
    alone = limited()
    assert alone.get("/api/v1/me", headers=auth("phk_guess")).status_code == 401


def test_an_unreachable_redis_falls_back_to_counting_in_the_process(limited: Any) -> None:
    import testservices

    client = limited(redis_url=f"redis://127.0.0.1:{testservices.free_port()}/0")
    for _ in range(2):
        assert client.get("/api/v1/me", headers=auth("phk_guess")).status_code == 401
    assert_throttled(client.get("/api/v1/me", headers=auth("phk_guess")), "failed token checks")


def test_zero_turns_a_limit_off(limited: Any) -> None:
    client = limited(rate_limit_token_failures=0)
    for _ in range(5):
        assert client.get("/api/v1/me", headers=auth("phk_guess")).status_code == 401
