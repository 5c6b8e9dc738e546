# ruff: noqa: F811  -- pytest fixtures imported from the spawner tests are parameters here
"""The Kubernetes spawner waits for an app's pod by list-then-watch, against the FAKE API server
(tests/support/fake_kube.py): it learns readiness from the watch, not by polling, and a watch
that answers 410 Gone, ends early or fails is followed by a fresh list and a new watch.

Counts of calls, not timings, show it: while a watch is open the spawner asks nothing else."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from profilerhub_worker.spawners import AppSpec, SpawnError, make_spawner
from tests.support.fake_kube import (
    BrokenWatchFakeKubeAPI,
    EndingWatchFakeKubeAPI,
    GoneWatchFakeKubeAPI,
    LeftoverPodFakeKubeAPI,
    SlowStartFakeKubeAPI,
)
from tests.support.hub import wait_for
from tests.worker.test_worker_spawner_kubernetes import config_for, spec  # noqa: F401  (fixtures)

PODS = "/api/v1/namespaces/profilerhub-apps/pods"


class Start(threading.Thread):
    """``spawner.start()`` in a thread, keeping what it returned or raised."""

    def __init__(self, spawner: Any) -> None:
        super().__init__(daemon=True)
        self.spawner = spawner
        self.result: Any = None

    def run(self) -> None:
        try:
            self.result = self.spawner.start()
        except SpawnError as exc:
            self.result = exc

    def outcome(self) -> Any:
        self.join(60)
        assert not self.is_alive(), "start did not return"
        return self.result


def start_slowly(fake: SlowStartFakeKubeAPI, spec: AppSpec, tmp_path: Path, watched: int = 0) -> Start:
    """Start the spawner in a thread; return once it has opened its ``watched``-th watch."""
    config = dataclasses.replace(config_for(fake.url, tmp_path), start_timeout=120)  # the test ends it
    started = Start(make_spawner("kubernetes", spec, config))
    started.start()
    wait_for(lambda: watches(fake) >= watched, f"the spawner opening watch {watched} of the app's pods", 60)
    return started


def watches(fake: SlowStartFakeKubeAPI) -> int:
    return fake.calls[("WATCH", PODS)]


def lists(fake: SlowStartFakeKubeAPI) -> int:
    return fake.calls[("GET", PODS)]


@pytest.fixture
def watching(spec: AppSpec, tmp_path: Path) -> Iterator[tuple[SlowStartFakeKubeAPI, Start]]:
    """A start waiting on its first watch of a pod that is still being created."""
    with SlowStartFakeKubeAPI() as fake:
        yield fake, start_slowly(fake, spec, tmp_path, watched=1)


def test_start_learns_that_the_pod_is_ready_from_the_watch_not_by_polling(
    watching: tuple[SlowStartFakeKubeAPI, Start],
) -> None:
    fake, started = watching
    fake.ready.set()
    assert str(started.outcome()).startswith("http://ph-app-")
    assert lists(fake) == 1 and watches(fake) == 1  # one list, one watch: no polling meanwhile


def test_an_image_pull_failure_seen_on_the_watch_fails_the_start_at_once(
    watching: tuple[SlowStartFakeKubeAPI, Start],
) -> None:
    fake, started = watching
    fake.fail.set()
    failed = started.outcome()
    assert isinstance(failed, SpawnError) and "ImagePullBackOff" in str(failed)
    assert not fake.names("Deployment", "profilerhub-apps")  # removed again
    assert lists(fake) == 2  # the start's one, and the stop's look that the pods are gone


def test_a_watch_answered_410_gone_is_followed_by_a_fresh_list_and_watch(
    spec: AppSpec, tmp_path: Path
) -> None:
    with GoneWatchFakeKubeAPI(times=2) as fake:
        started = start_slowly(fake, spec, tmp_path, watched=3)  # after two answered 410
        fake.ready.set()
        assert str(started.outcome()).startswith("http://")
        assert lists(fake) == 3  # each 410 sent the spawner back to a list, for a current version


@pytest.mark.parametrize(
    "misbehaving",
    [lambda: EndingWatchFakeKubeAPI(times=3), lambda: BrokenWatchFakeKubeAPI(times=3)],
    ids=["watch-ends-at-once", "watch-answers-500"],
)
def test_a_watch_that_ends_or_fails_is_reopened_after_a_fresh_list(
    misbehaving: Any, spec: AppSpec, tmp_path: Path
) -> None:
    with misbehaving() as fake:
        started = start_slowly(fake, spec, tmp_path, watched=4)  # after three ended or failed
        fake.ready.set()
        assert str(started.outcome()).startswith("http://")
        assert lists(fake) == 4


def test_a_change_between_the_list_and_the_watch_is_not_missed(spec: AppSpec, tmp_path: Path) -> None:
    """The watch starts at the list's version, so a pod that got ready in between is reported."""
    with SlowStartFakeKubeAPI() as fake:
        original = fake.serve_watch

        def ready_just_before_the_watch(handler: Any) -> None:
            fake.ready.set()
            original(handler)

        fake.serve_watch = ready_just_before_the_watch  # type: ignore[method-assign]
        started = start_slowly(fake, spec, tmp_path)
        assert str(started.outcome()).startswith("http://")
        assert lists(fake) == 1 and watches(fake) == 1


def test_a_ready_pod_that_is_terminating_is_not_taken_for_the_new_one(spec: AppSpec, tmp_path: Path) -> None:
    with LeftoverPodFakeKubeAPI() as fake:
        # Had the list's ready-but-terminating pod counted, the start would have returned unwatched.
        started = start_slowly(fake, spec, tmp_path, watched=1)
        fake.ready.set()
        assert str(started.outcome()).startswith("http://ph-app-")
