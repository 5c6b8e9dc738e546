"""The app lifecycle (spawn, poll, reconcile, delete) with the Kubernetes spawner selected by
settings alone, against a FAKE Kubernetes API server; real database and Redis.

What a worker restart must do here: find the running Deployments again from the rows' state,
adopt one it created but never recorded, and remove those no row owns; the polls of running apps
answer from the (re)started worker's one watch of the app Deployments, not a read per app.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from profilerhub_core.db.models import App, AppStatus
from profilerhub_core.records.app_states import transition
from profilerhub_worker import lifecycle
from profilerhub_worker.spawners.manifests import object_name
from tests.support.apps import create, delete, status_of
from tests.support.apps_fixtures import RecordedEnqueue
from tests.support.fake_kube import CrashingFakeKubeAPI, FakeKubeAPI
from tests.support.hub import wait_for

NAMESPACE = "ph-apps"


@pytest.fixture
def fake() -> Iterator[CrashingFakeKubeAPI]:
    with CrashingFakeKubeAPI() as server:
        yield server


@pytest.fixture
def kube_settings(apps_settings: Any, fake: FakeKubeAPI) -> Any:
    return apps_settings.model_copy(
        update={
            "spawner": "kubernetes",
            "k8s_api_url": fake.url,
            "k8s_namespace": NAMESPACE,
            "k8s_app_image": "profilerhub:test",
            "app_start_timeout": 2.0,
            "app_http_timeout": 1.0,
            "app_stop_grace": 0.5,
        }
    )


@contextmanager
def new_worker(settings: Any) -> Iterator[Any]:
    """A worker process's context, built from settings as a (re)started worker builds it."""
    from profilerhub_core.tasks import make_producer
    from profilerhub_worker.context import build_context

    ctx = build_context(settings, make_producer(settings.redis_url, queue=settings.celery_queue))
    ctx.enqueue = RecordedEnqueue()
    try:
        yield ctx
    finally:
        ctx.redis.close()
        ctx.sessions.kw["bind"].dispose()


@pytest.fixture
def kube_ctx(kube_settings: Any) -> Iterator[Any]:
    with new_worker(kube_settings) as ctx:
        yield ctx


def test_an_app_spawns_as_a_deployment_and_is_found_again_by_a_restarted_worker(
    apps_client: Any, seed: Any, alice: str, kube_ctx: Any, kube_settings: Any, fake: FakeKubeAPI
) -> None:
    app_id = create(apps_client, alice).json()["app_id"]
    assert lifecycle.spawn(kube_ctx, app_id) == "started"
    with seed.session() as session:
        app = session.get(App, app_id)
        assert app.status == AppStatus.InService
        assert app.endpoint == f"http://{object_name(app_id)}.{NAMESPACE}.svc:8888"
        assert app.spawner_state["kind"] == "kubernetes" and app.spawner_state["uid"]
    deployment = fake.get("Deployment", object_name(app_id), NAMESPACE)
    assert deployment is not None
    assert deployment["metadata"]["labels"]["profilerhub.io/user"] == "alice"

    with new_worker(kube_settings) as restarted:
        assert lifecycle.poll_running(restarted) == 0  # running: nothing failed
        assert lifecycle.reconcile(restarted)["orphans_stopped"] == 0  # owned: left alone
        assert status_of(seed, app_id) == AppStatus.InService
        assert delete(apps_client, alice).status_code == 202
        assert lifecycle.delete(restarted, app_id) == "deleted"
    assert status_of(seed, app_id) == AppStatus.Deleted
    assert not fake.names("Deployment", NAMESPACE) and not fake.names("Service", NAMESPACE)


def test_a_deployment_removed_behind_the_hubs_back_fails_the_app_with_the_reason(
    apps_client: Any, seed: Any, alice: str, kube_ctx: Any, fake: FakeKubeAPI
) -> None:
    app_id = create(apps_client, alice).json()["app_id"]
    lifecycle.spawn(kube_ctx, app_id)
    fake.remove("Deployment", object_name(app_id), NAMESPACE)
    assert lifecycle.poll_running(kube_ctx) == 1
    with seed.session() as session:
        app = session.get(App, app_id)
        assert app.status == AppStatus.Failed and "is gone" in (app.failure_reason or "")


def test_a_spawn_retried_after_a_worker_died_adopts_the_deployment_it_had_made(
    apps_client: Any, seed: Any, alice: str, kube_ctx: Any, fake: FakeKubeAPI
) -> None:
    from profilerhub_worker.spawners import make_spawner

    app_id = create(apps_client, alice).json()["app_id"]
    with seed.session() as session:  # the dead worker got as far as creating the objects
        spec = lifecycle._spec(session, session.get(App, app_id), kube_ctx)
    make_spawner("kubernetes", spec, kube_ctx.spawner_config).start()
    uid = fake.get("Deployment", object_name(app_id), NAMESPACE)["metadata"]["uid"]

    assert lifecycle.spawn(kube_ctx, app_id) == "started"
    with seed.session() as session:
        assert session.get(App, app_id).spawner_state["uid"] == uid
    assert len(fake.names("Deployment", NAMESPACE)) == 1


def test_the_reconciler_removes_deployments_no_live_app_owns(
    apps_client: Any, seed: Any, alice: str, kube_ctx: Any, fake: FakeKubeAPI
) -> None:
    app_id = create(apps_client, alice).json()["app_id"]
    lifecycle.spawn(kube_ctx, app_id)
    with seed.session() as session:  # the record says Failed (say, a poll raced a restart)
        transition(session, app_id, AppStatus.InService, AppStatus.Failed, failure_reason="test")
        session.commit()
    assert lifecycle.reconcile(kube_ctx)["orphans_stopped"] == 1
    assert not fake.names("Deployment", NAMESPACE) and not fake.names("Service", NAMESPACE)


def api_reads(fake: FakeKubeAPI) -> tuple[int, int, int]:
    """(lists of the app Deployments, watches of them, reads of one app's Deployment or pods)."""
    deployments = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
    per_app = sum(
        n
        for (method, path), n in fake.calls.items()
        if method == "GET" and (path.startswith(f"{deployments}/") or path.endswith("/pods"))
    )
    return fake.calls[("GET", deployments)], fake.calls[("WATCH", deployments)], per_app


def test_a_restarted_worker_polls_running_apps_from_one_fresh_list_and_watch(
    apps_client: Any, seed: Any, alice: str, kube_ctx: Any, kube_settings: Any, fake: FakeKubeAPI
) -> None:
    from profilerhub_worker.spawners.kube_watch import stop_watches

    app_ids = [create(apps_client, alice, name=name).json()["app_id"] for name in ("default", "second")]
    for app_id in app_ids:
        assert lifecycle.spawn(kube_ctx, app_id) == "started"
    assert lifecycle.poll_running(kube_ctx) == 0
    stop_watches()  # the worker process exits ...
    lists, watches, reads = api_reads(fake)
    with new_worker(kube_settings) as restarted:  # ... and a new one takes over
        for _ in range(3):
            assert lifecycle.poll_running(restarted) == 0
    assert api_reads(fake) == (lists + 1, watches + 1, reads)
    assert [status_of(seed, app_id) for app_id in app_ids] == [AppStatus.InService] * 2


def test_a_crash_looping_app_becomes_failed_with_the_pods_reason(
    apps_client: Any, seed: Any, alice: str, kube_ctx: Any, fake: CrashingFakeKubeAPI
) -> None:
    from profilerhub_worker.spawners.kube_watch import deployment_watch
    from profilerhub_worker.spawners.manifests import KubeOptions

    app_id = create(apps_client, alice).json()["app_id"]
    lifecycle.spawn(kube_ctx, app_id)
    assert lifecycle.poll_running(kube_ctx) == 0
    fake.crash(object_name(app_id))
    watch = deployment_watch(KubeOptions.from_options(kube_ctx.spawner_config.options))
    wait_for(
        lambda: (watch.deployment(object_name(app_id)) or {}).get("status", {}).get("readyReplicas") == 0,
        "the watch sending the crash",
    )
    assert lifecycle.poll_running(kube_ctx) == 1
    with seed.session() as session:
        app = session.get(App, app_id)
        assert app.status == AppStatus.Failed
        assert "CrashLoopBackOff" in (app.failure_reason or "") and object_name(app_id) in app.failure_reason
