"""The per-process cache of verified tokens: changes made through this hub show at once, changes
made elsewhere (another hub process) within ``token_cache_seconds``."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import ApiToken, UserProfile, utcnow
from profilerhub_core.db.session import make_engine
from tests.support.hub import auth, wait_for

API = "/api/v1"


def _revoke_elsewhere(url: str, where: Any) -> None:
    """Commit a change through an engine of its own, as another hub process would."""
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            session.execute(sa.update(ApiToken).where(where).values(revoked_at=utcnow()))
            session.commit()
    finally:
        engine.dispose()


def test_token_revoked_through_this_hub_is_refused_at_once(client: Any, seed: Any) -> None:
    secret = seed.user_token("d1", "alice")
    me = client.get(f"{API}/me", headers=auth(secret))
    assert me.status_code == 200  # now cached
    tokens = client.get(f"{API}/domains/d1/users/alice/tokens", headers=auth(secret)).json()["items"]
    token_id = next(t["token_id"] for t in tokens if secret.startswith(t["prefix"]))
    revoked = client.delete(f"{API}/domains/d1/users/alice/tokens/{token_id}", headers=auth(secret))
    assert revoked.status_code == 204
    assert client.get(f"{API}/me", headers=auth(secret)).status_code == 401


def test_role_changed_through_this_hub_applies_at_once(client: Any, seed: Any) -> None:
    secret = seed.user_token("d1", "boss", role="admin")
    assert client.get(f"{API}/domains/d1/users", headers=auth(secret)).status_code == 200
    with seed.session() as session:  # the hub's own sessions, as a route would write
        session.execute(sa.update(UserProfile).where(UserProfile.name == "boss").values(role="user"))
        session.commit()
    assert client.get(f"{API}/domains/d1/users", headers=auth(secret)).status_code == 403


def test_token_revoked_by_another_process_is_refused_within_the_cache_bound(
    client: Any, seed: Any, hub_settings: Any
) -> None:
    secret = seed.user_token("d1", "alice")
    assert client.get(f"{API}/me", headers=auth(secret)).status_code == 200
    _revoke_elsewhere(hub_settings.database_url, ApiToken.user_id.is_not(None))
    revoked_at = time.monotonic()
    wait_for(
        lambda: client.get(f"{API}/me", headers=auth(secret)).status_code == 401,
        "the revoked token refused",
        timeout=hub_settings.token_cache_seconds + 5,
    )
    assert time.monotonic() - revoked_at <= hub_settings.token_cache_seconds + 1.0


def test_cache_off_looks_the_token_up_on_every_request(hub_settings: Any, seed: Any) -> None:
    from fastapi.testclient import TestClient

    from profilerhub_hub.main import create_app

    app = create_app(hub_settings.model_copy(update={"token_cache_seconds": 0}))
    try:
        with TestClient(app) as client:
            secret = seed.user_token("d1", "alice")
            assert client.get(f"{API}/me", headers=auth(secret)).status_code == 200
            _revoke_elsewhere(hub_settings.database_url, ApiToken.user_id.is_not(None))
            assert client.get(f"{API}/me", headers=auth(secret)).status_code == 401
    finally:
        app.state.services.engine.dispose()
