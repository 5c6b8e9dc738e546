"""KubernetesSpawner: its manifests (pure dicts, validated against Kubernetes' schemas) and its
I/O against a FAKE Kubernetes API server (tests/support/fake_kube.py) through the official client.

There is no Kubernetes here: what these tests pin is what the spawner sends and how it reads the
answers (409 adopt, 404 done, 5xx retried, pods that never get ready or cannot pull their image).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import kubernetes_validate
import pytest

from profilerhub_worker.spawners import AppSpec, SpawnerConfig, SpawnError, make_spawner, spawner_class
from profilerhub_worker.spawners.kubernetes import KubernetesSpawner
from profilerhub_worker.spawners.local import app_command
from profilerhub_worker.spawners.manifests import KubeOptions, make_deployment, make_service, object_name
from tests.support.fake_kube import (
    KUBERNETES_VERSION,
    DownFakeKubeAPI,
    FakeKubeAPI,
    FlakyFakeKubeAPI,
    ImagePullFailsFakeKubeAPI,
    NeverReadyFakeKubeAPI,
)

APP_ID = "0f7e3f9a-aaaa-4bbb-8ccc-000000000001"
OPTIONS = {
    "k8s_app_image": "registry.example/profilerhub:1.0",
    "k8s_namespace": "profilerhub-apps",
    "k8s_release": "ph",
    "k8s_app_storage_secret": "ph-storage",
    "k8s_api_retries": 4,
}


@pytest.fixture
def spec() -> AppSpec:
    return AppSpec(
        app_id=APP_ID,
        domain="research",
        user="alice",
        user_id="user-alice",
        app_type="DetailedProfiler",
        app_name="default",
        env={"PROFILERHUB_APP_PUBLIC_KEY": "PEM", "AWS_SECRET_ACCESS_KEY": "the-workers-own-secret"},
    )


@pytest.fixture
def opts() -> KubeOptions:
    return KubeOptions.from_options(OPTIONS)


def config_for(api_url: str, tmp_path: Path, **extra: object) -> SpawnerConfig:
    return SpawnerConfig(
        home=tmp_path,
        start_timeout=2,
        http_timeout=1,
        stop_grace=1,
        options={**OPTIONS, "k8s_api_url": api_url, **extra},
    )


@pytest.fixture
def fake() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI() as server:
        yield server


# -- the manifests: pure, no cluster ---------------------------------------------------------


def test_manifests_validate_against_the_kubernetes_schema(spec: AppSpec, opts: KubeOptions) -> None:
    for manifest in (make_deployment(spec, opts), make_service(spec, opts)):
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


def test_a_tensorboard_app_runs_the_tensorboard_command_everywhere(spec: AppSpec, opts: KubeOptions) -> None:
    board = dataclasses.replace(spec, app_type="TensorBoard")
    deployment = make_deployment(board, opts)
    kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["profilerhub", "app", "--type", "TensorBoard"]
    assert app_command("TensorBoard")[-2:] == ["--type", "TensorBoard"]  # the local spawner's
    assert make_deployment(spec, opts)["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "profilerhub",
        "app",
    ]


def test_deployment_is_one_recreated_replica_labelled_for_the_reconciler(
    spec: AppSpec, opts: KubeOptions
) -> None:
    deployment = make_deployment(spec, opts)
    labels = deployment["metadata"]["labels"]
    assert labels["app.kubernetes.io/instance"] == "ph" and labels["app.kubernetes.io/component"] == "app"
    assert labels["profilerhub.io/app-id"] == APP_ID
    assert labels["profilerhub.io/domain"] == "research" and labels["profilerhub.io/user"] == "alice"
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"] == {"type": "Recreate"}
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert make_service(spec, opts)["spec"]["selector"] == selector


def test_app_container_runs_locked_down(spec: AppSpec, opts: KubeOptions) -> None:
    pod = make_deployment(spec, opts)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert context["runAsNonRoot"] and context["readOnlyRootFilesystem"]
    assert context["allowPrivilegeEscalation"] is False and context["capabilities"] == {"drop": ["ALL"]}
    assert pod["automountServiceAccountToken"] is False
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]  # the only writable place
    assert container["readinessProbe"]["httpGet"]["path"] == f"/apps/{APP_ID}/health"
    assert container["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }


def test_storage_credentials_come_from_the_secret_never_from_the_workers_env(
    spec: AppSpec, opts: KubeOptions
) -> None:
    env = make_deployment(spec, opts)["spec"]["template"]["spec"]["containers"][0]["env"]
    by_name = {item["name"]: item for item in env}
    assert "the-workers-own-secret" not in str(env)
    assert by_name["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "ph-storage"
    assert by_name["PROFILERHUB_APP_ID"]["value"] == APP_ID
    assert by_name["PROFILERHUB_APP_HOST"]["value"] == "0.0.0.0"


def test_empty_limits_are_left_out(spec: AppSpec) -> None:
    opts = KubeOptions.from_options({**OPTIONS, "k8s_app_cpu_limit": "", "k8s_app_memory_limit": ""})
    container = make_deployment(spec, opts)["spec"]["template"]["spec"]["containers"][0]
    assert "limits" not in container["resources"]
    kubernetes_validate.validate(make_deployment(spec, opts), KUBERNETES_VERSION, strict=True)


def test_the_owners_domain_sets_its_apps_resources_over_the_operators(
    spec: AppSpec, opts: KubeOptions
) -> None:
    def resources(domain: dict[str, str]) -> dict[str, dict[str, str]]:
        deployment = make_deployment(dataclasses.replace(spec, resources=domain), opts)
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
        return deployment["spec"]["template"]["spec"]["containers"][0]["resources"]  # type: ignore[no-any-return]

    operators = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    assert resources({}) == operators
    big = {"cpu_request": "2", "cpu_limit": "4", "memory_request": "8Gi", "memory_limit": "16Gi"}
    assert resources(big) == {
        "requests": {"cpu": "2", "memory": "8Gi"},
        "limits": {"cpu": "4", "memory": "16Gi"},
    }
    # Where the domain's value and the operator's would cross, the domain's wins.
    small = resources({"memory_limit": "128Mi", "cpu_limit": "50m"})
    assert small == {
        "requests": {"cpu": "50m", "memory": "128Mi"},
        "limits": {"cpu": "50m", "memory": "128Mi"},
    }
    wide = resources({"cpu_request": "3", "memory_request": "2Gi"})
    assert wide == {"requests": {"cpu": "3", "memory": "2Gi"}, "limits": {"cpu": "3", "memory": "2Gi"}}


def test_kubernetes_is_selected_by_settings_alone() -> None:
    from profilerhub_core.settings import Settings
    from profilerhub_worker.context import spawner_config

    settings = Settings(spawner="kubernetes", k8s_app_image="img:1", k8s_namespace="apps")
    assert spawner_class(settings.spawner) is KubernetesSpawner
    opts = KubeOptions.from_options(spawner_config(settings).options)
    assert opts.app_image == "img:1" and opts.namespace == "apps"


def test_kubernetes_spawner_without_an_image_is_refused_at_startup() -> None:
    from pydantic import ValidationError

    from profilerhub_core.settings import Settings

    with pytest.raises(ValidationError, match="PROFILERHUB_K8S_APP_IMAGE"):
        Settings(spawner="kubernetes")


# -- the I/O, against the fake API server -----------------------------------------------------


def test_start_creates_deployment_and_service_and_returns_the_service_endpoint(
    fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path
) -> None:
    spawner = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path))
    endpoint = spawner.start()
    name = object_name(APP_ID)
    assert endpoint == f"http://{name}.profilerhub-apps.svc:8888"
    assert fake.names("Deployment", "profilerhub-apps") == {name} == fake.names("Service", "profilerhub-apps")
    state = spawner.get_state()
    assert state["kind"] == "kubernetes" and state["version"] == 1 and state["name"] == name
    assert state["uid"] == fake.get("Deployment", name, "profilerhub-apps")["metadata"]["uid"]
    assert spawner.poll() is None


def test_a_restarted_worker_finds_the_instance_from_the_saved_state(
    fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path
) -> None:
    first = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path))
    first.start()
    again = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path), state=first.get_state())
    assert again.poll() is None
    again.stop()
    assert not fake.names("Deployment", "profilerhub-apps") and not fake.names("Service", "profilerhub-apps")
    assert again.poll() == 0  # stopped: nothing left to find


def test_start_after_a_crash_mid_spawn_adopts_the_existing_deployment(
    fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path
) -> None:
    crashed = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path))
    crashed.start()  # ... and the worker died before saving the state
    uid = crashed.get_state()["uid"]
    retried = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path), state={})
    retried.start()
    assert retried.get_state()["uid"] == uid  # the same Deployment, not a second one
    assert len(fake.names("Deployment", "profilerhub-apps")) == 1


def test_poll_reports_a_deployment_deleted_behind_its_back(
    fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path
) -> None:
    spawner = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path))
    spawner.start()
    fake.remove("Deployment", object_name(APP_ID), "profilerhub-apps")
    assert spawner.poll() == f"deployment {object_name(APP_ID)} is gone"


def test_poll_tells_a_recreated_deployment_from_the_one_it_started(
    fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path
) -> None:
    spawner = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path))
    spawner.start()
    fake.remove("Deployment", object_name(APP_ID), "profilerhub-apps")
    make_spawner("kubernetes", spec, config_for(fake.url, tmp_path)).start()  # someone else's
    assert "replaced" in str(spawner.poll())


def test_stopping_what_is_already_gone_is_fine(fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path) -> None:
    spawner = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path))
    spawner.stop()  # both deletes answer 404
    assert (
        fake.calls[("DELETE", f"/apis/apps/v1/namespaces/profilerhub-apps/deployments/{object_name(APP_ID)}")]
        == 1
    )


def test_server_errors_are_retried_until_the_api_answers(spec: AppSpec, tmp_path: Path) -> None:
    with FlakyFakeKubeAPI(failures=2) as flaky:
        spawner = make_spawner("kubernetes", spec, config_for(flaky.url, tmp_path))
        spawner.start()
        assert spawner.poll() is None
        assert flaky.failed[("POST", "/apis/apps/v1/namespaces/profilerhub-apps/deployments")] == 2
        assert len(flaky.names("Deployment", "profilerhub-apps")) == 1


def test_an_api_that_stays_down_fails_the_start_with_the_reason(spec: AppSpec, tmp_path: Path) -> None:
    with DownFakeKubeAPI() as down:
        spawner = make_spawner("kubernetes", spec, config_for(down.url, tmp_path))
        with pytest.raises(SpawnError, match="503"):
            spawner.start()
        assert (
            down.calls[("POST", "/api/v1/namespaces/profilerhub-apps/services")] == OPTIONS["k8s_api_retries"]
        )


def test_a_pod_that_never_gets_ready_times_out_and_is_removed(spec: AppSpec, tmp_path: Path) -> None:
    with NeverReadyFakeKubeAPI() as never_ready:
        spawner = make_spawner("kubernetes", spec, config_for(never_ready.url, tmp_path))
        with pytest.raises(SpawnError, match="not ready within 3s"):
            spawner.start()
        assert not never_ready.names("Deployment", "profilerhub-apps")
        assert not never_ready.names("Service", "profilerhub-apps")


def test_an_image_that_cannot_be_pulled_fails_at_once_saying_so(spec: AppSpec, tmp_path: Path) -> None:
    with ImagePullFailsFakeKubeAPI() as bad_image:
        spawner = make_spawner("kubernetes", spec, config_for(bad_image.url, tmp_path))
        with pytest.raises(SpawnError, match="ImagePullBackOff.*registry.example/profilerhub:1.0"):
            spawner.start()
        assert not bad_image.names("Deployment", "profilerhub-apps")


def test_the_fake_refuses_what_a_real_api_server_would_so_its_201s_mean_something(
    fake: FakeKubeAPI, spec: AppSpec, opts: KubeOptions
) -> None:
    import httpx

    bad = make_deployment(spec, opts)
    bad["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = 7  # not a string
    url = f"{fake.url}/apis/apps/v1/namespaces/profilerhub-apps/deployments"
    assert httpx.post(url, json=bad).status_code == 422
    assert httpx.post(url, json=make_deployment(spec, opts)).status_code == 201
    assert httpx.post(url, json=make_deployment(spec, opts)).json()["reason"] == "AlreadyExists"


def test_list_instances_finds_this_installations_apps_only(
    fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path
) -> None:
    ours = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path))
    ours.start()
    other_spec = AppSpec(
        "0f7e3f9a-aaaa-4bbb-8ccc-000000000002", "d", "bob", "u-bob", "DetailedProfiler", "default"
    )
    make_spawner("kubernetes", other_spec, config_for(fake.url, tmp_path, k8s_release="another")).start()
    found = list(KubernetesSpawner.list_instances(config_for(fake.url, tmp_path)))
    assert found == [(APP_ID, ours.get_state())]
    assert KubernetesSpawner.instance_identity(found[0][1]) == KubernetesSpawner.instance_identity(
        ours.get_state()
    )
