# ruff: noqa: F811  -- pytest fixtures imported from the spawner tests are parameters here
"""Per-owner storage credentials on Kubernetes: with ``k8s_app_storage_secret_template`` each app
pod reads its ``AWS_*`` from its owner's own Secret (which the operator scopes to the owner's
prefix), never the shared one nor the worker's; a missing Secret fails the start saying which.
Manifests validated with ``kubernetes-validate``; the I/O against the FAKE Kubernetes API."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest

from profilerhub_worker.spawners import AppSpec, SpawnError, make_spawner
from profilerhub_worker.spawners.manifests import KubeOptions, make_deployment, object_name
from tests.support.fake_kube import KUBERNETES_VERSION, FakeKubeAPI
from tests.worker.test_worker_spawner_kubernetes import APP_ID, OPTIONS, config_for, fake, spec  # noqa: F401  (fixtures)

PER_OWNER = {"k8s_app_storage_secret_template": "ph-storage-{user_id}"}
NAMESPACE = "profilerhub-apps"
KEYS = {"AWS_ACCESS_KEY_ID": "alice-key", "AWS_SECRET_ACCESS_KEY": "alice-secret"}


def secret_refs(deployment: dict[str, object]) -> dict[str, dict[str, object]]:
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]  # type: ignore[index]
    return {item["name"]: item["valueFrom"]["secretKeyRef"] for item in env if "valueFrom" in item}


def test_each_pod_reads_its_owners_own_secret_and_needs_its_keys(spec: AppSpec) -> None:
    opts = KubeOptions.from_options({**OPTIONS, **PER_OWNER})
    deployment = make_deployment(spec, opts)
    kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    refs = secret_refs(deployment)
    assert {ref["name"] for ref in refs.values()} == {"ph-storage-user-alice"}  # not the shared ph-storage
    assert (
        refs["AWS_ACCESS_KEY_ID"]["optional"] is False and refs["AWS_SECRET_ACCESS_KEY"]["optional"] is False
    )
    assert refs["AWS_SESSION_TOKEN"]["optional"] is True and refs["AWS_DEFAULT_REGION"]["optional"] is True
    assert "the-workers-own-secret" not in str(deployment)


def test_the_template_names_the_owner_by_ids(spec: AppSpec) -> None:
    spec.env["PROFILERHUB_APP_DOMAIN_ID"] = "dom-1"
    opts = KubeOptions.from_options(
        {**OPTIONS, "k8s_app_storage_secret_template": "s3-{domain_id}.{user_id}"}
    )
    assert {r["name"] for r in secret_refs(make_deployment(spec, opts)).values()} == {"s3-dom-1.user-alice"}


def test_an_app_starts_with_its_owners_secret(fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path) -> None:
    fake.add_secret("ph-storage-user-alice", KEYS, NAMESPACE)
    spawner = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path, **PER_OWNER))
    spawner.start()
    assert spawner.poll() is None
    stored = fake.get("Deployment", object_name(APP_ID), NAMESPACE)
    assert stored is not None and {r["name"] for r in secret_refs(stored).values()} == {
        "ph-storage-user-alice"
    }


def test_an_owner_without_a_storage_secret_gets_a_failed_app_saying_which(
    fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path
) -> None:
    fake.add_secret("ph-storage-user-bob", KEYS, NAMESPACE)  # somebody else's is no use
    spawner = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path, **PER_OWNER))
    with pytest.raises(
        SpawnError, match='CreateContainerConfigError: secret "ph-storage-user-alice" not found'
    ):
        spawner.start()
    assert not fake.names("Deployment", NAMESPACE) and not fake.names("Service", NAMESPACE)


def test_a_secret_without_the_secret_key_fails_the_start(
    fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path
) -> None:
    fake.add_secret("ph-storage-user-alice", {"AWS_ACCESS_KEY_ID": "alice-key"}, NAMESPACE)
    spawner = make_spawner("kubernetes", spec, config_for(fake.url, tmp_path, **PER_OWNER))
    with pytest.raises(SpawnError, match="couldn't find key AWS_SECRET_ACCESS_KEY"):
        spawner.start()


def test_a_template_that_makes_no_valid_secret_name_creates_nothing(
    fake: FakeKubeAPI, spec: AppSpec, tmp_path: Path
) -> None:
    spawner = make_spawner(
        "kubernetes", spec, config_for(fake.url, tmp_path, k8s_app_storage_secret_template="S3_{user_id}")
    )
    with pytest.raises(SpawnError, match="'S3_user-alice' .* is not a valid Kubernetes name"):
        spawner.start()
    assert not fake.calls  # refused before any API call


def test_a_template_with_an_unknown_field_is_refused_at_startup() -> None:
    from pydantic import ValidationError

    from profilerhub_core.settings import Settings

    for template in ("ph-{username}", "ph-{user}", "ph-{domain}-{user_id}"):  # names get reused: ids only
        with pytest.raises(ValidationError, match=r"use only the fields \{domain_id\} and \{user_id\}"):
            Settings(k8s_app_storage_secret_template=template)
