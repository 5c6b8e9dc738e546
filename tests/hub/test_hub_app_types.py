"""An app type either works or is refused: both of the hub's types (the profiler app and
TensorBoard, each with its own app process) are created; a type the hub does not know answers a
422 and changes nothing, instead of starting some other app under its name."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from profilerhub_core.db.models import App
from tests.support.apps import APPS
from tests.support.hub import auth


def test_an_app_type_this_hub_cannot_run_is_refused_and_changes_nothing(
    apps_client: Any, seed: Any, alice: str, sent: Any
) -> None:
    answer = apps_client.post(
        APPS.format(domain="d1", user="alice"),
        json={"app_type": "JupyterServer", "app_name": "default"},
        headers=auth(alice),
    )
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "ValidationError" and "app_type" in error["message"]
    with seed.session() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(App)) == 0
    assert sent.sent == []


@pytest.mark.parametrize("app_type", ["DetailedProfiler", "TensorBoard"])
def test_each_app_type_of_the_hub_is_created(
    apps_client: Any, seed: Any, alice: str, sent: Any, app_type: str
) -> None:
    answer = apps_client.post(
        APPS.format(domain="d1", user="alice"), json={"app_type": app_type}, headers=auth(alice)
    )
    assert answer.status_code == 202, answer.text
    assert answer.json()["app_type"] == app_type
    assert len(sent.sent) == 1
