# ruff: noqa: F811  -- pytest fixtures imported from apps_stack are parameters here
"""Apps end to end: a real hub, real Celery worker and beat processes on a real Redis, real apps.

Crash tests kill real processes (worker, app, hub) and await the state the design promises,
each within a bounded time.  The tests share one stack (each works in a domain of its own); the
ones that kill its processes restore them and run last.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from profilerhub_core.apptokens import generate_signing_key, issue_app_token
from tests.e2e.apps_stack import AppStack, browser, pid_alive, shared_stack  # noqa: F401  (fixtures)
from tests.support.hub import auth, wait_for


def test_app_created_opened_and_deleted_through_real_workers(shared_stack: AppStack) -> None:
    stack = shared_stack
    alice = stack.user_token("life", "alice")
    created = stack.create(alice, "life", "alice")
    assert created.status_code == 202 and created.json()["status"] == "Pending"
    app_id = created.json()["app_id"]
    stack.wait_status(alice, "life", "alice", "InService")
    page = stack.open(alice, app_id)
    assert page.status_code == 200 and "alice's profiler" in page.text
    pid = stack.instance(app_id)["pid"]

    deleting = stack.delete(alice, "life", "alice")
    assert deleting.status_code == 202 and deleting.json()["status"] == "Deleting"
    stack.wait_status(alice, "life", "alice", "Deleted")
    assert not pid_alive(pid)
    assert stack.open(alice, app_id).status_code == 503


def test_killed_app_process_is_failed_with_a_reason_within_seconds(shared_stack: AppStack) -> None:
    stack = shared_stack
    alice = stack.user_token("crash", "alice")
    app_id = stack.running_app(alice, "crash", "alice")
    os.kill(stack.instance(app_id)["pid"], signal.SIGKILL)
    killed_at = time.monotonic()
    failed = stack.wait_status(alice, "crash", "alice", "Failed", timeout=10)
    assert time.monotonic() - killed_at < 10
    assert "unexpectedly" in failed["failure_reason"]
    assert stack.delete(alice, "crash", "alice").status_code == 202
    stack.wait_status(alice, "crash", "alice", "Deleted")


def test_duplicated_and_late_tasks_through_the_queue_change_nothing(shared_stack: AppStack) -> None:
    from profilerhub_core.tasks import DELETE_APP, SPAWN_APP, make_producer

    stack = shared_stack
    alice = stack.user_token("dup", "alice")
    app_id = stack.running_app(alice, "dup", "alice")
    before = stack.describe(alice, "dup", "alice")
    pid = stack.instance(app_id)["pid"]
    celery = make_producer(stack.env["PROFILERHUB_REDIS_URL"], queue=stack.env["PROFILERHUB_CELERY_QUEUE"])
    for _ in range(3):
        celery.send_task(SPAWN_APP, args=[app_id])  # duplicates of the spawn
        celery.send_task(DELETE_APP, args=[app_id])  # a delete nobody asked for
    # A later app's spawn, queued behind them, shows the worker has worked through the queue.
    bob = stack.user_token("dup", "bob")
    stack.create(bob, "dup", "bob")
    stack.wait_status(bob, "dup", "bob", "InService")
    after = stack.describe(alice, "dup", "alice")
    assert after["status"] == "InService" and after["status_changed_at"] == before["status_changed_at"]
    assert stack.instance(app_id)["pid"] == pid and pid_alive(pid)


def test_nobody_but_the_owner_reaches_an_app(shared_stack: AppStack) -> None:
    stack = shared_stack
    alice = stack.user_token("iso", "alice")
    app_id = stack.running_app(alice, "iso", "alice")
    for intruder in (
        stack.user_token("iso", "mallory"),
        stack.user_token("iso-other", "carol", role="admin"),
    ):
        answer = stack.open(intruder, app_id)
        assert answer.status_code == 404 and "alice" not in answer.text
    direct = f"http://127.0.0.1:{stack.instance(app_id)['port']}/apps/{app_id}/"
    assert httpx.get(direct).status_code == 401
    forged = issue_app_token(generate_signing_key(), app_id, "anyone")
    answer = httpx.get(direct, headers=auth(forged))
    assert answer.status_code == 401 and "alice" not in answer.text
    assert httpx.get(direct, headers=auth(alice)).status_code == 401  # a hub API token is not an app token


def test_thirty_apps_for_thirty_users_at_once_reach_in_service_and_the_limit_holds(
    shared_stack: AppStack,
) -> None:
    stack = shared_stack
    tokens = [stack.user_token("many", f"user{i}", max_live_apps=30) for i in range(31)]

    def create(i: int) -> int:
        return stack.create(tokens[i], "many", f"user{i}").status_code

    with ThreadPoolExecutor(30) as pool:
        codes = list(pool.map(create, range(30)))
    assert codes == [202] * 30
    over = stack.create(tokens[30], "many", "user30")
    assert over.status_code == 429 and over.json()["error"]["code"] == "ResourceLimitExceeded"

    def all_in_service() -> bool:
        statuses = [stack.describe(tokens[i], "many", f"user{i}")["status"] for i in range(30)]
        assert "Failed" not in statuses
        return statuses == ["InService"] * 30

    wait_for(all_in_service, "30 apps InService", 120)
    app_id = stack.describe(tokens[17], "many", "user17")["app_id"]
    assert stack.open(tokens[17], app_id).status_code == 200


@pytest.mark.browser
def test_owner_opens_app_in_a_browser_and_another_users_session_gets_404(
    shared_stack: AppStack, browser: Any
) -> None:
    stack = shared_stack
    alice = stack.user_token("web", "alice")
    bob = stack.user_token("web", "bob")
    alices_app = stack.running_app(alice, "web", "alice")
    stack.running_app(bob, "web", "bob")

    owner = browser.new_context()
    page = owner.new_page()
    page.goto(stack.presigned_url(alice, "web", "alice"))
    assert page.url == f"{stack.url}/apps/{alices_app}/"
    assert page.locator("#owner").inner_text() == "alice's profiler"
    cookie = next(c for c in owner.cookies() if c["name"] == "profilerhub_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and cookie["path"] == f"/apps/{alices_app}/"
    assert page.evaluate("document.cookie") == ""  # HttpOnly: scripts cannot read it
    page.reload()  # the session lasts beyond the one-time URL
    assert page.locator("#owner").inner_text() == "alice's profiler"

    intruder = browser.new_context()
    other = intruder.new_page()
    other.goto(stack.presigned_url(bob, "web", "bob"))  # bob signs in to his own app ...
    assert other.locator("#owner").inner_text() == "bob's profiler"
    answer = other.goto(f"{stack.url}/apps/{alices_app}/")  # ... and tries alice's
    # His cookie is scoped to his app's path, so the browser sends none here: 401, the same
    # answer for every app id (existing or not); a cookie of his own for her app would be 404.
    assert answer is not None and answer.status == 401
    assert "alice" not in other.content()
    owner.close()
    intruder.close()


def test_worker_killed_mid_spawn_leaves_one_app_in_service(shared_stack: AppStack) -> None:
    stack = shared_stack
    assert stack.worker is not None
    stack.worker.terminate()  # replace the plain worker by one that spawns slowly
    stack.worker.wait(30)
    stack.start_worker(
        PROFILERHUB_SPAWNER="profilerhub_worker.spawners.fakes:SlowSpawn",
        PROFILERHUB_TEST_SLOW_SPAWN_SECONDS="60",
    )
    alice = stack.user_token("midspawn", "alice")
    app_id = stack.create(alice, "midspawn", "alice").json()["app_id"]

    def app_process_up() -> bool:
        try:
            return bool(stack.instance(app_id).get("port"))
        except (OSError, ValueError):
            return False

    wait_for(app_process_up, "the app process started by the slow worker", 30)
    first_pid = stack.instance(app_id)["pid"]
    stack.worker.kill()  # SIGKILL: no cleanup, the task unacknowledged, its lock left to lapse
    stack.worker.wait()
    assert stack.describe(alice, "midspawn", "alice")["status"] == "Pending"

    stack.start_worker()  # a plain worker takes over
    stack.wait_status(alice, "midspawn", "alice", "InService", timeout=45)
    assert stack.instance(app_id)["pid"] == first_pid  # the running instance was adopted, not doubled
    assert stack.open(alice, app_id).status_code == 200


def test_apps_keep_running_and_open_again_after_a_hub_restart(shared_stack: AppStack) -> None:
    stack = shared_stack
    alice = stack.user_token("restart", "alice")
    app_id = stack.running_app(alice, "restart", "alice")
    pid = stack.instance(app_id)["pid"]
    stack.restart_hub()
    wait_for(lambda: stack.open(alice, app_id).status_code == 200, "the app open after the restart", 10)
    assert stack.instance(app_id)["pid"] == pid and pid_alive(pid)
