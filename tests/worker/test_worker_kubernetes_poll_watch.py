# ruff: noqa: F811  -- pytest fixtures imported from the spawner tests are parameters here
"""A running app is watched, not polled: each worker process keeps one list-then-watch of the
installation's app Deployments (``spawners/kube_watch.py``) and ``poll`` answers from it, against
the FAKE API server (tests/support/fake_kube.py) through the official client.

Counts of calls, not timings, show it: N running apps polled K times cost one list and one watch,
no read per app; a Deployment deleted or a pod crash-looping while watched fails its app at the
next poll, with the reason; a watch that answers 410, ends or answers 500 is followed by a fresh
list and a new watch, and what changed meanwhile is not missed; a watch that cannot be opened,
or one older than its bound, is not trusted: poll reads as it did before the watch."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from profilerhub_worker.spawners import AppSpec, kube_watch, make_spawner
from profilerhub_worker.spawners.kube_watch import deployment_watch
from tests.support.fake_kube import (
    BrokenWatchFakeKubeAPI,
    CrashingFakeKubeAPI,
    CutWatchFakeKubeAPI,
    FakeKubeAPI,
)
from tests.support.hub import wait_for
from tests.worker.test_worker_spawner_kubernetes import config_for, spec  # noqa: F401  (fixtures)

NAMESPACE = "profilerhub-apps"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"


def start_apps(fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path, count: int) -> list[Any]:
    """``count`` running apps, each started by a spawner of its own."""
    spawners = []
    for number in range(count):
        app = dataclasses.replace(spec, app_id=f"0f7e3f9a-aaaa-4bbb-8ccc-{number:012d}")
        spawner = make_spawner("kubernetes", app, config_for(fake.url, tmp_path))
        spawner.start()
        spawners.append(spawner)
    return spawners


def per_app_reads(fake: FakeKubeAPI) -> int:
    """Reads of one app's objects: a Deployment by name, or one app's pods."""
    return (
        sum(
            n
            for (method, path), n in fake.calls.items()
            if method == "GET" and path.startswith(f"{DEPLOYMENTS}/")
        )
        + fake.calls[("GET", PODS)]
    )


def lists(fake: FakeKubeAPI) -> int:
    return fake.calls[("GET", DEPLOYMENTS)]


def watches(fake: FakeKubeAPI) -> int:
    return fake.calls[("WATCH", DEPLOYMENTS)]


def ready_replicas(deployment: dict[str, Any] | None) -> int | None:
    return None if deployment is None else deployment["status"]["readyReplicas"]


def test_polling_running_apps_costs_one_list_and_one_watch_and_no_read_per_app(
    spec: AppSpec, tmp_path: Path
) -> None:
    with FakeKubeAPI() as fake:
        spawners = start_apps(fake, spec, tmp_path, 5)
        before = per_app_reads(fake)
        for _ in range(4):
            assert [spawner.poll() for spawner in spawners] == [None] * 5
        assert per_app_reads(fake) == before
        assert lists(fake) == 1 and watches(fake) == 1


# How an app dies behind the spawner's back: what the test does to its Deployment, what the watch
# then shows of it, and the reason the next poll gives.
DEATHS = {
    "deployment-deleted": (
        lambda fake, name: fake.remove("Deployment", name, NAMESPACE),
        lambda watched: watched is None,
        "deployment {name} is gone",
    ),
    "pod-crash-looping": (
        lambda fake, name: fake.crash(name),
        lambda watched: ready_replicas(watched) == 0,
        "pod {name}-7d9f-x1: CrashLoopBackOff: back-off 10s restarting failed container=app",
    ),
}


@pytest.mark.parametrize("death", list(DEATHS))
def test_an_app_that_dies_while_watched_is_failed_at_the_next_poll_with_the_reason(
    death: str, spec: AppSpec, tmp_path: Path
) -> None:
    kill, shown_dead, reason = DEATHS[death]
    with CrashingFakeKubeAPI() as fake:
        dying, kept = start_apps(fake, spec, tmp_path, 2)
        assert [dying.poll(), kept.poll()] == [None, None]
        watch = deployment_watch(dying.opts)
        kill(fake, dying.name)
        wait_for(lambda: shown_dead(watch.deployment(dying.name)), f"the watch sending the {death}")
        assert dying.poll() == reason.format(name=dying.name)
        assert kept.poll() is None
        assert lists(fake) == 1 and watches(fake) == 1  # learnt from the watch, confirmed by a read


@pytest.mark.parametrize("then", ["gone", "end", "broken"], ids=["410-gone", "ends-at-once", "answers-500"])
def test_a_watch_that_answers_410_ends_or_fails_is_followed_by_a_fresh_list_and_nothing_is_missed(
    then: str, spec: AppSpec, tmp_path: Path
) -> None:
    with CutWatchFakeKubeAPI() as fake:
        gone, kept = start_apps(fake, spec, tmp_path, 2)
        assert [gone.poll(), kept.poll()] == [None, None]
        watch = deployment_watch(gone.opts)
        # The open watch is cut; the Deployment goes while the next watch is being asked for, and
        # that one answers 410 / ends at once / answers 500.
        fake.cut_watches(then=then, meanwhile=lambda: fake.remove("Deployment", gone.name, NAMESPACE))
        wait_for(
            lambda: watches(fake) >= 3 and watch.deployment(kept.name) is not None,
            lambda: f"a third watch (lists {lists(fake)}, watches {watches(fake)})",
        )
        assert lists(fake) == 3  # after the cut one, and after the misbehaving one
        before = per_app_reads(fake)
        assert gone.poll() == f"deployment {gone.name} is gone"
        assert kept.poll() is None
        assert per_app_reads(fake) == before + 1  # only the gone app's, confirming it


def test_a_watch_that_cannot_be_opened_falls_back_to_reading_each_app(spec: AppSpec, tmp_path: Path) -> None:
    with BrokenWatchFakeKubeAPI(times=10**6) as fake:
        fake.ready.set()
        gone, kept = start_apps(fake, spec, tmp_path, 2)
        before = per_app_reads(fake)
        for _ in range(3):
            assert [gone.poll(), kept.poll()] == [None, None]
        assert per_app_reads(fake) == before + 6  # one Deployment read per app and poll, as before
        fake.remove("Deployment", gone.name, NAMESPACE)
        assert gone.poll() == f"deployment {gone.name} is gone"  # at once: nothing waits on the watch
        assert watches(fake) >= 1


def test_a_watch_whose_list_is_older_than_its_bound_is_not_trusted(
    spec: AppSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeKubeAPI() as fake:
        running = start_apps(fake, spec, tmp_path, 1)[0]
        assert running.poll() is None
        monkeypatch.setattr(kube_watch, "STALE_AFTER_S", -1.0)  # every list now counts as too old
        before = per_app_reads(fake)
        assert running.poll() is None
        assert per_app_reads(fake) == before + 1
