# ruff: noqa: F811  -- pytest fixtures imported from apps_stack are parameters here
"""The TensorBoard app end to end: a real hub and worker spawn real TensorBoard over event files
this test writes into its owner's storage folder; the owner reaches it through the proxy, in
httpx and in Chromium, and nobody else does; and the same over S3 (moto's server)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.apps_stack import AppStack, app_stack, browser, shared_stack  # noqa: F401  (fixtures)
from tests.support.hub import auth, wait_for

TB = "TensorBoard"
RUN = "tb-run-1/raw/tensorboard"  # TensorBoard names a run by its folder under the owner's jobs/


def owner_folder(stack: AppStack, token: str, domain: str, user: str) -> str:
    """``{domain_id}/{user_id}``: the owner's folder in the hub's storage."""
    with httpx.Client(base_url=stack.url, headers=auth(token), timeout=30) as client:
        domain_id = client.get(f"/api/v1/domains/{domain}").json()["domain_id"]
        user_id = client.get(f"/api/v1/domains/{domain}/users/{user}").json()["user_id"]
    return f"{domain_id}/{user_id}"


def write_scalar(folder: Path) -> Path:
    """An event file with a ``loss`` scalar (three steps) in ``folder``; its path."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(folder))
    for step in range(3):
        value = summary_pb2.Summary.Value(tag="loss", simple_value=1.0 / (step + 1))
        summary = summary_pb2.Summary(value=[value])
        writer.add_event(event_pb2.Event(wall_time=time.time(), step=step, summary=summary))
    writer.close()
    return next(folder.glob("*tfevents*"))


def wait_for_scalar(stack: AppStack, token: str, app_id: str) -> dict[str, Any]:
    """TensorBoard's scalar tags once it has loaded the run (it loads in a background thread)."""
    tags: dict[str, Any] = {}

    def loaded() -> bool:
        tags.update(get(stack, token, app_id, "data/plugin/scalars/tags").json())
        return RUN in tags

    wait_for(loaded, f"TensorBoard listing run {RUN}", 60)
    return tags


@pytest.fixture(scope="module")
def board(shared_stack: AppStack) -> dict[str, str]:
    """alice's running TensorBoard app over one scalar: her token and the app's id."""
    alice = shared_stack.user_token("tb", "alice")
    folder = owner_folder(shared_stack, alice, "tb", "alice")
    write_scalar(shared_stack.home / "storage" / folder / "jobs" / RUN)  # the hub's default storage_url
    created = shared_stack.create(alice, "tb", "alice", app_type=TB)
    assert created.status_code == 202, created.text
    shared_stack.wait_status(alice, "tb", "alice", "InService", app_type=TB)
    return {"token": alice, "app_id": created.json()["app_id"]}


def get(stack: AppStack, token: str, app_id: str, path: str) -> httpx.Response:
    return httpx.get(f"{stack.url}/apps/{app_id}/{path}", headers=auth(token), timeout=30)


def test_owner_reads_her_scalar_through_the_proxy(shared_stack: AppStack, board: dict[str, str]) -> None:
    token, app_id = board["token"], board["app_id"]
    assert shared_stack.instance(app_id)["port"]  # a real process of the local spawner
    assert "loss" in wait_for_scalar(shared_stack, token, app_id)[RUN]
    assert get(shared_stack, token, app_id, "data/runs").json() == [RUN]
    page = get(shared_stack, token, app_id, "")
    assert page.status_code == 200 and "<tb-webapp" in page.text


def test_nobody_but_the_owner_reaches_the_tensorboard(shared_stack: AppStack, board: dict[str, str]) -> None:
    app_id = board["app_id"]
    mallory = shared_stack.user_token("tb", "mallory")
    answer = get(shared_stack, mallory, app_id, "data/runs")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "ResourceNotFound"
    direct = f"http://127.0.0.1:{shared_stack.instance(app_id)['port']}/apps/{app_id}/data/runs"
    refused = httpx.get(direct, timeout=30)  # straight to the app's port, no hub token
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "Unauthorized"
    assert httpx.get(direct, headers=auth(board["token"]), timeout=30).status_code == 401  # API token


@pytest.mark.browser
def test_owner_opens_tensorboard_in_chromium(
    shared_stack: AppStack, board: dict[str, str], browser: Any
) -> None:
    app_id = board["app_id"]
    signed = httpx.post(
        f"{shared_stack.url}/api/v1/domains/tb/users/alice/apps/{TB}/default/presigned-url",
        headers=auth(board["token"]),
        timeout=30,
    )
    signed.raise_for_status()
    context = browser.new_context()
    page = context.new_page()
    answer = page.goto(signed.json()["url"])
    assert answer is not None and answer.status == 200
    assert page.url == f"{shared_stack.url}/apps/{app_id}/"
    page.locator("tb-webapp").wait_for(state="attached")
    page.get_by_text("loss").first.wait_for(timeout=60_000)  # the front end fetched her scalar's tag
    context.close()


def test_owner_reads_her_scalar_from_s3_and_not_another_users(
    app_stack: Any, s3_server: dict[str, str], s3_bucket: str, tmp_path: Path
) -> None:
    import boto3

    stack = app_stack(
        beat=False,
        PROFILERHUB_STORAGE_URL=f"s3://{s3_bucket}/hubdata",
        PROFILERHUB_S3_ENDPOINT_URL=s3_server["endpoint_url"],
    )
    alice, bob = stack.user_token("tbs3", "alice"), stack.user_token("tbs3", "bob")
    s3 = boto3.client("s3", endpoint_url=s3_server["endpoint_url"], region_name=s3_server["region"])
    events = write_scalar(tmp_path / "events")
    mine = f"hubdata/{owner_folder(stack, alice, 'tbs3', 'alice')}/jobs/{RUN}/{events.name}"
    s3.upload_file(str(events), s3_bucket, mine)
    other = f"hubdata/{owner_folder(stack, bob, 'tbs3', 'bob')}/jobs/bobs-run/raw/tensorboard/{events.name}"
    s3.upload_file(str(events), s3_bucket, other)
    created = stack.create(alice, "tbs3", "alice", app_type=TB)
    assert created.status_code == 202, created.text
    stack.wait_status(alice, "tbs3", "alice", "InService", app_type=TB)
    app_id = created.json()["app_id"]
    assert "loss" in wait_for_scalar(stack, alice, app_id)[RUN]
    assert get(stack, alice, app_id, "data/runs").json() == [RUN]  # bob's run is not in her folder
