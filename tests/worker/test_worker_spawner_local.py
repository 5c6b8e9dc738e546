"""LocalProcessSpawner against real processes; the misbehaving fakes fail the way they should."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import psutil
import pytest

from profilerhub_core.apptokens import generate_signing_key, issue_app_token, public_key_pem
from profilerhub_worker.spawners import AppSpec, LocalProcessSpawner, SpawnerConfig, SpawnError, make_spawner
from profilerhub_worker.spawners.base import wait_for
from profilerhub_worker.spawners.fakes import BadSpawn, NeverSpawn


@pytest.fixture(scope="module")
def signing_key():
    return generate_signing_key()


@pytest.fixture
def spec(signing_key) -> AppSpec:
    return AppSpec(
        app_id="0f7e3f9a-aaaa-4bbb-8ccc-000000000001",
        domain="research",
        user="alice",
        user_id="user-alice",
        app_type="DetailedProfiler",
        app_name="default",
        env={"PROFILERHUB_APP_PUBLIC_KEY": public_key_pem(signing_key)},
    )


@pytest.fixture
def config(tmp_path: Path) -> SpawnerConfig:
    return SpawnerConfig(home=tmp_path, start_timeout=20, http_timeout=20, stop_grace=3)


@pytest.fixture
def started(spec: AppSpec, config: SpawnerConfig):
    spawner = make_spawner("local", spec, config)
    spawner.start()
    yield spawner
    spawner.stop()


def test_started_app_runs_in_its_own_session_and_answers_health(started: LocalProcessSpawner) -> None:
    assert started.poll() is None
    assert os.getsid(started.pid) == started.pid  # survives the worker's and hub's exit
    health = httpx.get(f"{started.endpoint}/apps/{started.spec.app_id}/health")
    assert health.status_code == 200
    assert started.log_path.exists()


def test_direct_request_without_token_gets_401_and_nothing_else(started: LocalProcessSpawner) -> None:
    answer = httpx.get(f"{started.endpoint}/apps/{started.spec.app_id}/")
    assert answer.status_code == 401
    assert "alice" not in answer.text
    assert answer.json()["error"]["code"] == "Unauthorized"


def test_request_with_hub_token_sees_owners_page(started: LocalProcessSpawner, signing_key) -> None:
    token = issue_app_token(signing_key, started.spec.app_id, "user-alice")
    answer = httpx.get(
        f"{started.endpoint}/apps/{started.spec.app_id}/", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200
    assert "alice&#x27;s profiler" in answer.text or "alice's profiler" in answer.text


def test_state_lets_a_new_spawner_find_poll_and_stop_the_instance(
    started: LocalProcessSpawner, spec: AppSpec, config: SpawnerConfig
) -> None:
    state = started.get_state()
    assert state["version"] == 1 and state["kind"] == "local" and state["pid"] == started.pid
    other = make_spawner("local", spec, config, state)
    assert other.poll() is None
    assert other.start() == started.endpoint  # a retried start adopts the running instance
    pid = started.pid
    other.stop()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_killed_app_polls_as_not_running_with_a_reason(started: LocalProcessSpawner) -> None:
    os.kill(started.pid, signal.SIGKILL)
    assert wait_for(lambda: started.poll() is not None, 5)
    polled = started.poll()  # once: a second poll may see the process reaped and answer differently
    assert polled in (-9, f"process {started.pid} is gone") or "exited" in str(polled)


def test_recycled_pid_is_not_taken_for_the_app(spec: AppSpec, config: SpawnerConfig) -> None:
    spawner = make_spawner(
        "local",
        spec,
        config,
        {"version": 1, "kind": "local", "pid": os.getpid(), "create_time": 1.0, "port": 1},
    )
    assert "another process" in str(spawner.poll())


def test_state_of_another_version_is_ignored(spec: AppSpec, config: SpawnerConfig) -> None:
    spawner = make_spawner("local", spec, config, {"version": 99, "kind": "local", "pid": os.getpid()})
    assert spawner.poll() == 0


def test_bad_spawn_fails_at_once_with_the_apps_last_words(spec: AppSpec, config: SpawnerConfig) -> None:
    with pytest.raises(SpawnError, match="refusing to start"):
        BadSpawn(spec, config).start()


def test_never_spawn_times_out_and_leaves_no_process(spec: AppSpec, tmp_path: Path) -> None:
    spawner = NeverSpawn(spec, SpawnerConfig(home=tmp_path, start_timeout=1, http_timeout=1, stop_grace=1))
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(SpawnError, match="did not bind a port within 1s"):
        spawner.start()
    leftovers = [
        p
        for p in psutil.Process().children(recursive=True)
        if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE
    ]
    assert leftovers == []


def test_unknown_spawner_name_is_refused(spec: AppSpec, config: SpawnerConfig) -> None:
    with pytest.raises(ValueError, match="unknown spawner"):
        make_spawner("nope", spec, config)


def test_an_instance_found_without_its_app_can_be_stopped_but_never_started(config: SpawnerConfig) -> None:
    found = LocalProcessSpawner.found("app-with-no-row", config, {})
    assert found.spec is None and found.poll() is not None
    found.stop()  # nothing there: fine
    with pytest.raises(RuntimeError, match="found, not spawned"):
        found.start()
