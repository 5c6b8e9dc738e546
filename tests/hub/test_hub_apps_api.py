"""The app API and lifecycle, in process: routes through a TestClient, tasks as plain functions.

Real parts: the database (SQLite and PostgreSQL), Redis (locks), app processes, the proxy.
The through-a-real-worker versions live in tests/e2e.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from profilerhub_core.db.models import App, AppStatus, AuditEvent, utcnow
from profilerhub_core.records.app_states import IllegalTransition, transition
from profilerhub_core.records.apps import save_instance
from profilerhub_core.tasks import DELETE_APP, SPAWN_APP
from profilerhub_worker import lifecycle
from tests.support.apps import APPS, ONE, backdate, create, delete, describe, status_of
from tests.support.hub import auth, wait_for


def test_create_app_answers_pending_at_once_and_enqueues_the_id_after_commit(
    apps_client: Any, apps_hub: Any, seed: Any, alice: str
) -> None:
    seen_at_send: list[AppStatus] = []

    class CheckingSender:
        def send(self, task_name: str, app_id: str) -> None:
            assert task_name == SPAWN_APP
            seen_at_send.append(status_of(seed, app_id))  # another session sees it: committed

    apps_hub.state.services.app_tasks = CheckingSender()
    answer = create(apps_client, alice)
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert body["status"] == "Pending" and body["url"] == f"/apps/{body['app_id']}/"
    assert body["app_type"] == "DetailedProfiler" and body["app_name"] == "default"
    assert seen_at_send == [AppStatus.Pending]


def test_app_goes_in_service_opens_for_its_owner_and_is_deleted_with_its_process(
    apps_client: Any, seed: Any, alice: str, running: str, worker_ctx: Any, sent: Any
) -> None:
    described = describe(apps_client, alice).json()
    assert described["status"] == "InService" and described["last_activity_at"] is not None
    page = apps_client.get(f"/apps/{running}/", headers=auth(alice))
    assert page.status_code == 200 and "alice's profiler" in page.text
    with seed.session() as session:
        pid = session.get(App, running).spawner_state["pid"]

    answer = delete(apps_client, alice)
    assert answer.status_code == 202 and answer.json()["status"] == "Deleting"
    assert sent.sent[-1] == (DELETE_APP, running)
    assert lifecycle.delete(worker_ctx, running) == "deleted"
    wait_for(lambda: _gone(pid), f"app process {pid} gone")
    kept = describe(apps_client, alice).json()  # deleted apps stay readable
    assert kept["status"] == "Deleted" and kept["app_id"] == running
    again = create(apps_client, alice)  # the name is free again
    assert again.status_code == 202 and again.json()["app_id"] != running


def test_every_state_change_is_in_the_audit_log_once(
    apps_client: Any, seed: Any, alice: str, running: str, worker_ctx: Any
) -> None:
    """The user's operations (CreateApp, DeleteApp: their moves to Pending and Deleting) and the
    worker's moves (AppInService, AppDeleted), one row each."""
    delete(apps_client, alice)
    lifecycle.delete(worker_ctx, running)
    with seed.session() as session:
        events = session.scalars(sa.select(AuditEvent).order_by(AuditEvent.id)).all()
    mine = [e for e in events if running in (e.target, (e.detail or {}).get("app_id"))]
    assert [(e.action, e.actor) for e in mine] == [
        ("CreateApp", "d1/alice"),
        ("AppInService", "worker"),
        ("DeleteApp", "d1/alice"),
        ("AppDeleted", "worker"),
    ]
    assert mine[2].detail == {"app_id": running, "from": "InService", "to": "Deleting", "via": "api"}


def test_second_live_app_of_the_same_name_is_409_resource_in_use(apps_client: Any, alice: str) -> None:
    assert create(apps_client, alice).status_code == 202
    second = create(apps_client, alice)
    assert second.status_code == 409 and second.json()["error"]["code"] == "ResourceInUse"
    assert create(apps_client, alice, name="other").status_code == 202


def test_domain_live_app_limit_answers_429(apps_client: Any, seed: Any) -> None:
    seed.domain("small", max_live_apps=1)
    token = seed.user_token("small", "bob")
    assert create(apps_client, token, "small", "bob").status_code == 202
    over = create(apps_client, token, "small", "bob", name="second")
    assert over.status_code == 429 and over.json()["error"]["code"] == "ResourceLimitExceeded"


def test_pending_app_cannot_be_deleted(apps_client: Any, alice: str) -> None:
    create(apps_client, alice)
    answer = delete(apps_client, alice)
    assert answer.status_code == 409 and "only InService or Failed" in answer.json()["error"]["message"]


def test_user_profile_with_live_apps_cannot_be_deleted(apps_client: Any, seed: Any, alice: str) -> None:
    create(apps_client, alice)
    answer = apps_client.delete("/api/v1/domains/d1/users/alice", headers=auth(seed.admin_token))
    assert answer.status_code == 409


def test_bad_app_names_and_types_are_refused_and_change_nothing(apps_client: Any, alice: str) -> None:
    url = APPS.format(domain="d1", user="alice")
    for body in ({"app_name": "../x"}, {"app_type": "Jupyter"}, {"app_name": "a" * 64}, {"extra": 1}):
        answer = apps_client.post(url, json=body, headers=auth(alice))
        assert 400 <= answer.status_code < 500 and "error" in answer.json(), body
    bad_json = apps_client.post(
        url, content=b"{nope", headers={**auth(alice), "content-type": "application/json"}
    )
    assert bad_json.status_code == 400
    assert apps_client.get(url, headers=auth(alice)).json()["items"] == []
    assert apps_client.get(url + "?status=Sleeping", headers=auth(alice)).status_code in (400, 422)


def test_user_cannot_see_or_open_another_users_app(apps_client: Any, seed: Any, running: str) -> None:
    mallory = seed.user_token("d1", "mallory")
    assert describe(apps_client, mallory).status_code == 404
    assert apps_client.get(APPS.format(domain="d1", user="alice"), headers=auth(mallory)).status_code == 404
    assert delete(apps_client, mallory).status_code == 404
    opened = apps_client.get(f"/apps/{running}/", headers=auth(mallory))
    assert opened.status_code == 404 and "alice" not in opened.text
    presign = apps_client.post(
        ONE.format(domain="d1", user="alice", name="default") + "/presigned-url", headers=auth(mallory)
    )
    assert presign.status_code == 404


def presign(client: Any, token: str) -> Any:
    url = ONE.format(domain="d1", user="alice", name="default") + "/presigned-url"
    return client.post(url, headers=auth(token))


def test_admin_of_another_domain_gets_nothing(apps_client: Any, seed: Any, running: str) -> None:
    other_admin = seed.user_token("d2", "carol", role="admin")
    assert describe(apps_client, other_admin).status_code == 404
    assert apps_client.get(f"/apps/{running}/", headers=auth(other_admin)).status_code == 404
    listed = apps_client.get("/api/v1/apps", headers=auth(other_admin)).json()["items"]
    assert listed == []
    assert presign(apps_client, other_admin).status_code == 404


def test_administrators_may_manage_a_users_app_but_never_open_it(
    apps_client: Any, seed: Any, alice: str, running: str
) -> None:
    own_admin = seed.user_token("d1", "dave", role="admin")
    for admin in (own_admin, seed.admin_token):
        assert describe(apps_client, admin).json()["status"] == "InService"  # may manage it ...
        opened = apps_client.get(f"/apps/{running}/", headers=auth(admin))  # ... never open it
        assert opened.status_code == 403 and opened.json()["error"]["code"] == "AccessDenied"
        assert "owner alone" in opened.json()["error"]["message"]
        assert presign(apps_client, admin).status_code == 403
    assert presign(apps_client, alice).status_code == 200
    assert apps_client.get(f"/apps/{running}/", headers=auth(alice)).status_code == 200


def test_list_all_apps_is_for_administrators_and_filters_by_status(
    apps_client: Any, seed: Any, alice: str, running: str
) -> None:
    assert create(apps_client, alice, name="second").status_code == 202
    assert apps_client.get("/api/v1/apps", headers=auth(alice)).status_code == 403
    admin = auth(seed.admin_token)
    live = apps_client.get("/api/v1/apps?status=InService", headers=admin).json()["items"]
    assert [(a["app_id"], a["user"], a["domain"]) for a in live] == [(running, "alice", "d1")]
    first = apps_client.get("/api/v1/apps?limit=1", headers=admin).json()
    assert len(first["items"]) == 1 and first["next_token"]
    rest = apps_client.get(f"/api/v1/apps?limit=1&next_token={first['next_token']}", headers=admin).json()
    assert rest["items"][0]["app_id"] != first["items"][0]["app_id"]


def test_duplicated_and_late_tasks_do_nothing(
    apps_client: Any, seed: Any, alice: str, running: str, worker_ctx: Any
) -> None:
    with seed.session() as session:
        state = dict(session.get(App, running).spawner_state)
    assert lifecycle.spawn(worker_ctx, running) == "skipped"  # duplicate spawn: state moved on
    assert lifecycle.delete(worker_ctx, running) == "skipped"  # delete before anyone asked
    with seed.session() as session:
        assert session.get(App, running).spawner_state == state
    delete(apps_client, alice)
    assert lifecycle.delete(worker_ctx, running) == "deleted"
    assert lifecycle.delete(worker_ctx, running) == "skipped"  # duplicate delete
    assert lifecycle.spawn(worker_ctx, running) == "skipped"  # very late spawn
    assert status_of(seed, running) == AppStatus.Deleted


def test_compare_and_set_moves_only_from_the_expected_state(seed: Any, running: str) -> None:
    with seed.session() as session:
        assert not transition(session, running, AppStatus.Pending, AppStatus.Failed)
        with pytest.raises(IllegalTransition):
            transition(session, running, AppStatus.InService, AppStatus.Pending)
        with pytest.raises(IllegalTransition):
            transition(session, running, AppStatus.Deleted, AppStatus.Deleting)


def test_app_that_cannot_start_is_failed_with_the_reason_and_can_be_deleted(
    apps_client: Any, seed: Any, alice: str, worker_ctx: Any
) -> None:
    worker_ctx.spawner = "profilerhub_worker.spawners.fakes:BadSpawn"
    app_id = create(apps_client, alice).json()["app_id"]
    assert lifecycle.spawn(worker_ctx, app_id) == "failed"
    failed = describe(apps_client, alice).json()
    assert failed["status"] == "Failed" and "refusing to start" in failed["failure_reason"]
    assert delete(apps_client, alice).status_code == 202
    assert lifecycle.delete(worker_ctx, app_id) == "deleted"


def test_killed_app_process_becomes_failed_with_a_reason(
    seed: Any, running: str, worker_ctx: Any, apps_client: Any, alice: str
) -> None:
    import os
    import signal

    with seed.session() as session:
        os.kill(session.get(App, running).spawner_state["pid"], signal.SIGKILL)
    from tests.support.hub import wait_for

    wait_for(
        lambda: lifecycle.poll_running(worker_ctx) == 1 or status_of(seed, running) == AppStatus.Failed,
        "the killed app noticed",
        timeout=10,
    )
    failed = describe(apps_client, alice).json()
    assert failed["status"] == "Failed" and "unexpectedly" in failed["failure_reason"]
    assert apps_client.get(f"/apps/{running}/", headers=auth(alice)).status_code == 503


def test_reconciler_resends_unclaimed_pending_and_fails_it_past_the_timeout(
    apps_client: Any, seed: Any, alice: str, worker_ctx: Any
) -> None:
    app_id = create(apps_client, alice).json()["app_id"]
    backdate(seed, app_id, "status_changed_at", worker_ctx.resend_after + 1)  # as if the task was lost
    assert lifecycle.reconcile(worker_ctx)["resent"] == 1
    assert worker_ctx.enqueue.sent == [(SPAWN_APP, app_id)]
    # Never taken by a worker (the queue was down for longer than the start timeout): re-sent, not failed.
    backdate(seed, app_id, "status_changed_at", worker_ctx.pending_timeout + 1)
    assert lifecycle.reconcile(worker_ctx) == {"failed": 0, "resent": 1, "restarted": 0, "orphans_stopped": 0}
    # Taken, and its start never finished (its worker died): failed past the timeout from then.
    tried = (utcnow() - timedelta(seconds=worker_ctx.pending_timeout + 1)).isoformat()
    with seed.session() as session:
        save_instance(session, app_id, AppStatus.Pending, spawner_state={lifecycle.SPAWN_TRIED: tried})
        session.commit()
    assert lifecycle.reconcile(worker_ctx)["failed"] == 1
    assert "did not start within" in describe(apps_client, alice).json()["failure_reason"]


def test_reconciler_stops_instances_no_app_owns(
    apps_client: Any, seed: Any, alice: str, running: str, worker_ctx: Any
) -> None:
    import psutil

    with seed.session() as session:  # the record says Failed (say, the poll raced a restart)
        pid = session.get(App, running).spawner_state["pid"]
        transition(session, running, AppStatus.InService, AppStatus.Failed, failure_reason="test")
        session.commit()
    assert psutil.pid_exists(pid)
    assert lifecycle.reconcile(worker_ctx)["orphans_stopped"] == 1
    wait_for(lambda: _gone(pid), f"orphan process {pid} gone")


def test_idle_app_is_culled_after_the_domains_idle_minutes(
    apps_client: Any, seed: Any, running: str, worker_ctx: Any
) -> None:
    from profilerhub_core.records import domains

    with seed.session() as session:
        domains.update_domain(session, domains.require_domain(session, "d1"), {"idle_minutes": 1})
        session.commit()
    assert lifecycle.cull_idle(worker_ctx) == 0  # just started: not idle
    backdate(seed, running, "last_activity_at", 120)
    assert lifecycle.cull_idle(worker_ctx) == 1
    assert status_of(seed, running) == AppStatus.Deleting
    assert worker_ctx.enqueue.sent == [(DELETE_APP, running)]


def test_reconciler_leaves_an_instance_saved_before_its_port_was_known(
    seed: Any, running: str, worker_ctx: Any
) -> None:
    import json

    import psutil

    instance = worker_ctx.spawner_config.home / "apps" / running / "instance.json"
    early = {**json.loads(instance.read_text()), "port": None}  # as first written, mid-start
    instance.write_text(json.dumps(early))
    assert lifecycle.reconcile(worker_ctx)["orphans_stopped"] == 0
    assert psutil.pid_exists(early["pid"]) and status_of(seed, running) == AppStatus.InService


def _gone(pid: int) -> bool:
    """True once ``pid`` has exited: no such process, or a zombie its parent has not reaped yet."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
