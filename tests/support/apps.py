"""Helpers shared by the app tests: API calls and database nudges."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from profilerhub_core.db.models import App, AppStatus, utcnow
from tests.support.hub import auth

APPS = "/api/v1/domains/{domain}/users/{user}/apps"
ONE = APPS + "/DetailedProfiler/{name}"


def create(client: Any, token: str, domain: str = "d1", user: str = "alice", name: str = "default") -> Any:
    return client.post(
        APPS.format(domain=domain, user=user),
        json={"app_type": "DetailedProfiler", "app_name": name},
        headers=auth(token),
    )


def describe(client: Any, token: str, domain: str = "d1", user: str = "alice", name: str = "default") -> Any:
    return client.get(ONE.format(domain=domain, user=user, name=name), headers=auth(token))


def delete(client: Any, token: str, domain: str = "d1", user: str = "alice", name: str = "default") -> Any:
    return client.delete(ONE.format(domain=domain, user=user, name=name), headers=auth(token))


def status_of(seed: Any, app_id: str) -> AppStatus:
    with seed.session() as session:
        return session.get(App, app_id).status  # type: ignore[no-any-return]


def backdate(seed: Any, app_id: str, column: str, seconds: float) -> None:
    """Set an app's timestamp ``column`` to ``seconds`` ago, as if that much time had passed."""
    with seed.session() as session:
        session.execute(
            sa.update(App).where(App.id == app_id).values({column: utcnow() - timedelta(seconds=seconds)})
        )
        session.commit()
