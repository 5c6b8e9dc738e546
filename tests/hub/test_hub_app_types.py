"""An app type either works or is refused: TensorBoard has no app yet (issue 11), so creating one
answers 400 and changes nothing, instead of starting the profiler app under its name."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from profilerhub_core.db.models import App
from tests.support.apps import APPS
from tests.support.hub import auth


def test_an_app_type_this_hub_cannot_run_is_refused_and_changes_nothing(
    apps_client: Any, seed: Any, alice: str, sent: Any
) -> None:
    answer = apps_client.post(
        APPS.format(domain="d1", user="alice"),
        json={"app_type": "TensorBoard", "app_name": "default"},
        headers=auth(alice),
    )
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "ValidationError" and "TensorBoard" in error["message"]
    with seed.session() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(App)) == 0
    assert sent.sent == []


def test_the_profiler_app_type_is_still_created(apps_client: Any, seed: Any, alice: str, sent: Any) -> None:
    answer = apps_client.post(
        APPS.format(domain="d1", user="alice"), json={"app_type": "DetailedProfiler"}, headers=auth(alice)
    )
    assert answer.status_code == 202, answer.text
    assert len(sent.sent) == 1
