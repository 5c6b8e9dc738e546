"""The Helm chart in helm/profilerhub, without helm or a cluster.

The templates are rendered by tests/support/helm_render.py (a small renderer for the template
subset the chart uses: NOT helm), for the chart's defaults and for ci/full-values.yaml (every
option on); every rendered object is validated against the Kubernetes schemas with
kubernetes-validate and checked for the labels, security contexts and resources the chart
promises. The values files are checked against values.schema.json.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.support.fake_kube import KUBERNETES_VERSION, SlowStartFakeKubeAPI
from tests.support.helm_render import MissingValue, Renderer, TemplateError, deep_merge, parse, render_chart
from tests.support.hub import wait_for
from tests.support.keda_schema import SCHEMAS as KEDA_SCHEMAS

CHART = Path(__file__).resolve().parent.parent / "helm" / "profilerhub"
REQUIRED = {
    "settings": {"storageUrl": "s3://traces/profilerhub"},
    "secrets": {"databaseUrl": "postgresql+psycopg://ph@db/ph", "redisUrl": "redis://redis:6379/0"},
}
FULL = yaml.safe_load((CHART / "ci" / "full-values.yaml").read_text())
POD_KINDS = {"Deployment", "Job"}


def schema() -> dict[str, Any]:
    return json.loads((CHART / "values.schema.json").read_text())  # type: ignore[no-any-return]


def values() -> dict[str, Any]:
    return yaml.safe_load((CHART / "values.yaml").read_text())  # type: ignore[no-any-return]


def objects(overrides: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return render_chart(CHART, overrides)["objects"]  # type: ignore[no-any-return]


def by_kind(rendered: list[tuple[str, dict[str, Any]]], kind: str, component: str) -> dict[str, Any]:
    (found,) = [
        obj
        for _, obj in rendered
        if obj["kind"] == kind and obj["metadata"]["labels"].get("app.kubernetes.io/component") == component
    ]
    return found


def pod_specs(rendered: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (obj["metadata"]["name"], obj["spec"]["template"]["spec"])
        for _, obj in rendered
        if obj["kind"] in POD_KINDS
    ]


# -- values and schema -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["values.yaml", "ci/full-values.yaml"])
def test_values_files_match_the_schema(name: str) -> None:
    jsonschema.validate(deep_merge(values(), yaml.safe_load((CHART / name).read_text())), schema())


def test_the_schema_refuses_unknown_keys_at_every_level() -> None:
    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if "properties" in node:
                assert node.get("additionalProperties") is False, f"{where} admits unknown keys"
            for key, child in node.items():
                walk(child, f"{where}.{key}")

    walk(schema(), "schema")
    for bad in ({"hub": {"replica": 3}}, {"surprise": True}, {"apps": {"resources": {"gpu": "1"}}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(deep_merge(values(), bad), schema())


def test_every_values_key_is_commented() -> None:
    lines = (CHART / "values.yaml").read_text().splitlines()
    uncommented = [
        line.strip()
        for i, line in enumerate(lines)
        if re.match(r"^\s*[A-Za-z][\w-]*:", line)
        and not lines[i - 1].strip().startswith("#")
        and not re.match(r"^\s*(requests|limits|cpu|memory):", line)  # inside a documented resources block
    ]
    assert uncommented == []


def test_every_value_a_template_reads_exists_in_values_and_schema() -> None:
    used = set()
    for path in (CHART / "templates").rglob("*.*"):
        used |= set(re.findall(r"\.Values\.([\w.]+)", path.read_text()))
    assert used
    for dotted in sorted(used):
        node: Any = values()
        spec: Any = schema()
        for part in dotted.split("."):
            assert isinstance(node, dict) and part in node, f".Values.{dotted} is not in values.yaml"
            node = node[part]
            if "$ref" in spec:
                spec = schema()["$defs"][spec["$ref"].rsplit("/", 1)[1]]
            assert part in spec.get("properties", {}), f".Values.{dotted} is not in values.schema.json"
            spec = spec["properties"][part]


# -- the rendered objects --------------------------------------------------------------------


@pytest.mark.parametrize("overrides", [REQUIRED, FULL], ids=["defaults", "full-values"])
def test_every_rendered_object_validates_against_the_kubernetes_schema(overrides: dict[str, Any]) -> None:
    rendered = objects(overrides)
    assert len(rendered) >= 15
    for template, obj in rendered:
        if obj["apiVersion"].startswith("keda.sh/"):  # a custom resource: KEDA's documented spec
            jsonschema.validate(obj, KEDA_SCHEMAS[obj["kind"]])
            continue
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(
                f"{template}: {obj['kind']} {obj['metadata']['name']}: {exc.message} at {list(exc.path)}"
            )


def test_full_values_render_every_optional_object() -> None:
    kinds = sorted(
        {(obj["kind"], obj["metadata"]["labels"]["app.kubernetes.io/component"]) for _, obj in objects(FULL)}
    )
    assert ("Ingress", "hub") in kinds and ("Deployment", "redis") in kinds
    assert ("PodDisruptionBudget", "hub") in kinds and ("PodDisruptionBudget", "worker") in kinds
    assert ("NetworkPolicy", "app") in kinds and ("Role", "worker") in kinds
    assert ("ScaledObject", "ingest") in kinds and ("TriggerAuthentication", "ingest") in kinds
    assert ("PodDisruptionBudget", "ingest") in kinds


@pytest.mark.parametrize("overrides", [REQUIRED, FULL], ids=["defaults", "full-values"])
def test_every_object_is_labelled_and_named_from_the_release(overrides: dict[str, Any]) -> None:
    prefix = overrides.get("fullnameOverride") or "ph-profilerhub"
    for template, obj in objects(overrides):
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "profilerhub", template
        assert (
            labels["app.kubernetes.io/instance"] == "ph" and labels["app.kubernetes.io/managed-by"] == "Helm"
        )
        assert labels.get("app.kubernetes.io/component"), template
        assert obj["metadata"]["name"].startswith(prefix), f"{template}: {obj['metadata']['name']}"


@pytest.mark.parametrize("overrides", [REQUIRED, FULL], ids=["defaults", "full-values"])
def test_every_container_is_locked_down_and_has_resources(overrides: dict[str, Any]) -> None:
    for name, spec in pod_specs(objects(overrides)):
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["runAsNonRoot"] and context["readOnlyRootFilesystem"], name
            assert context["allowPrivilegeEscalation"] is False and context["capabilities"]["drop"] == [
                "ALL"
            ], name
            assert (
                container["resources"]["requests"]["memory"] and container["resources"]["limits"]["memory"]
            ), name


@pytest.mark.parametrize("overrides", [REQUIRED, FULL], ids=["defaults", "full-values"])
def test_app_and_ingest_workers_consume_the_queues_the_code_routes_their_tasks_to(
    overrides: dict[str, Any], redis_url: str
) -> None:
    """The app worker Deployment consumes the app queue alone, the ingest Deployment the ingest
    queue alone, and the queue names they get (``worker --queues``) are where the hub's producer
    puts each kind of task in a real Redis: SPAWN_APP on one, INGEST_JOB on the other."""
    import redis

    from profilerhub_core.tasks import INGEST_JOB, SPAWN_APP, make_producer, queues_of

    rendered = objects(overrides)
    args = {
        component: by_kind(rendered, "Deployment", component)["spec"]["template"]["spec"]["containers"][0][
            "args"
        ]
        for component in ("worker", "ingest")
    }
    kinds = {component: a[a.index("--queues") + 1] for component, a in args.items()}
    assert kinds == {"worker": "apps", "ingest": "ingest"}
    config = by_kind(rendered, "ConfigMap", "settings")["data"]
    queue = f"{config['PROFILERHUB_CELERY_QUEUE']}-{uuid.uuid4().hex[:8]}"  # this test's own keys
    producer = make_producer(redis_url, queue=queue)
    client = redis.Redis.from_url(redis_url)
    try:
        producer.send_task(SPAWN_APP, args=["a"])
        producer.send_task(INGEST_JOB, args=["j"])
        for component, task in (("worker", SPAWN_APP), ("ingest", INGEST_JOB)):
            (name,) = queues_of(queue, [kinds[component]])
            (message,) = client.lrange(f"{queue}:{name}", 0, -1)
            assert json.loads(message)["headers"]["task"] == task
    finally:
        client.delete(*[f"{queue}:{name}" for name in queues_of(queue)])
        client.close()


def test_keda_scales_the_ingest_deployment_on_the_redis_list_its_tasks_wait_in(redis_url: str) -> None:
    """The ScaledObject's listName is the very Redis list an ingest task waits in (sent through the
    hub's producer with the chart's queue), its target the ingest Deployment, whose replicas it owns."""
    import redis

    from profilerhub_core.tasks import INGEST_TRACE, make_producer

    rendered = objects(FULL)
    scaled = by_kind(rendered, "ScaledObject", "ingest")
    deployment = by_kind(rendered, "Deployment", "ingest")
    assert scaled["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert "replicas" not in deployment["spec"]  # KEDA's HPA sets it
    assert by_kind(objects(REQUIRED), "Deployment", "ingest")["spec"]["replicas"] == 2
    assert not [obj for _, obj in objects(REQUIRED) if obj["apiVersion"].startswith("keda.sh/")]
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "redis" and trigger["metadata"]["address"] == "ph-redis:6379"  # the bundled one
    assert (
        trigger["authenticationRef"]["name"]
        == by_kind(rendered, "TriggerAuthentication", "ingest")["metadata"]["name"]
    )
    queue = FULL["settings"]["celeryQueue"]
    client = redis.Redis.from_url(redis_url)
    before = client.llen(trigger["metadata"]["listName"])
    make_producer(redis_url, queue=queue).send_task(INGEST_TRACE, args=["j", "c", 0, "k", "r"])
    try:
        assert client.llen(trigger["metadata"]["listName"]) == before + 1
    finally:
        client.rpop(trigger["metadata"]["listName"])
        client.close()
    external = deep_merge(FULL, {"redis": {"enabled": False}, "secrets": {"redisUrl": "redis://r:6379/0"}})
    (trigger,) = by_kind(objects(external), "ScaledObject", "ingest")["spec"]["triggers"]
    assert trigger["metadata"]["address"] == "redis.cache.svc:6379"
    no_address = deep_merge(external, {"ingestWorker": {"autoscaling": {"redisAddress": ""}}})
    with pytest.raises(TemplateError, match="redisAddress"):
        objects(no_address)


def test_only_the_worker_holds_a_kubernetes_token() -> None:
    for name, spec in pod_specs(objects(FULL)):
        holds = spec.get("automountServiceAccountToken", True)
        assert holds == name.endswith("-worker"), name


def test_hub_scales_beat_is_one_recreated_pod_and_migration_is_a_pre_upgrade_hook() -> None:
    rendered = objects(FULL)
    assert by_kind(rendered, "Deployment", "hub")["spec"]["replicas"] == 3
    assert by_kind(rendered, "Deployment", "worker")["spec"]["replicas"] == 4
    beat = by_kind(rendered, "Deployment", "beat")
    assert beat["spec"]["replicas"] == 1 and beat["spec"]["strategy"] == {"type": "Recreate"}
    job = by_kind(rendered, "Job", "migration")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["db", "upgrade"]


def test_a_settings_change_rolls_the_pods_through_the_checksum() -> None:
    def checksum(overrides: dict[str, Any]) -> str:
        annotations = by_kind(objects(overrides), "Deployment", "hub")["spec"]["template"]["metadata"][
            "annotations"
        ]
        return str(annotations["checksum/settings"])

    assert checksum(REQUIRED) == checksum(REQUIRED)
    assert checksum(REQUIRED) != checksum(deep_merge(REQUIRED, {"settings": {"logLevel": "debug"}}))


def test_every_setting_the_chart_sets_is_a_real_setting() -> None:
    from profilerhub_core.settings import Settings

    rendered = objects(FULL)
    names = set(by_kind(rendered, "ConfigMap", "settings")["data"]) | set(
        by_kind(rendered, "Secret", "secrets")["data"]
    )
    fields = {f"PROFILERHUB_{name.upper()}" for name in Settings.model_fields}
    assert {n for n in names if n.startswith("PROFILERHUB_")} - fields == set()
    config = by_kind(rendered, "ConfigMap", "settings")["data"]
    Settings.model_validate(
        {k.removeprefix("PROFILERHUB_").lower(): v for k, v in config.items()} | {"secret_key": "x" * 32}
    )


def test_explicit_secrets_are_used_and_an_existing_secret_replaces_the_chart_s() -> None:
    import base64

    secret = by_kind(objects(FULL), "Secret", "secrets")
    assert (
        base64.b64decode(secret["data"]["PROFILERHUB_ADMIN_TOKEN"]).decode() == FULL["secrets"]["adminToken"]
    )
    assert base64.b64decode(secret["data"]["PROFILERHUB_APP_TOKEN_PRIVATE_KEY"]).startswith(
        b"-----BEGIN PRIVATE KEY"
    )
    existing = objects(deep_merge(REQUIRED, {"secrets": {"existingSecret": "my-secrets"}}))
    assert not [obj for _, obj in existing if obj["kind"] == "Secret"]
    hub = by_kind(existing, "Deployment", "hub")["spec"]["template"]["spec"]["containers"][0]
    assert {"secretRef": {"name": "my-secrets"}} in hub["envFrom"]


def test_missing_required_values_fail_the_render_with_a_message() -> None:
    with pytest.raises(TemplateError, match="settings.storageUrl is required"):
        render_chart(CHART, {"secrets": REQUIRED["secrets"]})
    nodes, defines = parse("port: {{ .Values.hub.service.prot }}")  # a typo in a template
    with pytest.raises(MissingValue, match=r"\.hub\.service\.prot"):
        Renderer(defines, {"Values": values()}).render(nodes, {"Values": values()})


def test_notes_tell_how_to_get_the_admin_token() -> None:
    notes = render_chart(CHART, FULL)["notes"]
    assert "get secret ph-secrets" in notes and "PROFILERHUB_ADMIN_TOKEN" in notes


def test_the_workers_role_grants_exactly_what_the_spawner_uses(tmp_path: Path) -> None:
    from profilerhub_worker.spawners import AppSpec, SpawnerConfig, make_spawner
    from profilerhub_worker.spawners.kubernetes import KubernetesSpawner

    role = by_kind(objects(FULL), "Role", "worker")
    granted = {(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    verbs = {"POST": "create", "DELETE": "delete", "WATCH": "watch"}
    with SlowStartFakeKubeAPI() as fake:  # its pods get ready once watched: the start uses the watch
        config = SpawnerConfig(
            home=tmp_path,
            start_timeout=120,  # the test makes the pod ready, not a clock
            http_timeout=1,
            stop_grace=0.5,
            options={
                "k8s_api_url": fake.url,
                "k8s_app_image": "img:1",
                "k8s_namespace": FULL["apps"]["namespace"],
            },
        )
        spawner = make_spawner(
            "kubernetes",
            AppSpec("0f7e3f9a-aaaa-4bbb-8ccc-000000000009", "d", "u", "uid", "DetailedProfiler", "default"),
            config,
        )
        started = threading.Thread(target=spawner.start, daemon=True)
        started.start()
        wait_for(lambda: any(method == "WATCH" for method, _ in fake.calls), "the spawner watching pods", 30)
        fake.ready.set()
        started.join(30)
        assert spawner.poll() is None
        list(KubernetesSpawner.list_instances(config))
        spawner.stop()
        used = set()
        for method, path in fake.calls:
            parts = path.strip("/").split("/")
            at = parts.index("namespaces")
            assert parts[at + 1] == FULL["apps"]["namespace"]  # the Role's namespace, nothing else
            resource, named = parts[at + 2], len(parts) > at + 3
            used.add((resource, verbs.get(method) or ("get" if named else "list")))
    assert used == granted


def test_the_settings_the_chart_gives_the_worker_make_app_pods_its_network_policy_selects() -> None:
    from profilerhub_core.settings import Settings
    from profilerhub_worker.context import spawner_config
    from profilerhub_worker.spawners import AppSpec
    from profilerhub_worker.spawners.manifests import KubeOptions, make_deployment

    rendered = objects(FULL)
    config = by_kind(rendered, "ConfigMap", "settings")["data"]
    env = {k.removeprefix("PROFILERHUB_").lower(): v for k, v in config.items()}
    settings = Settings.model_validate(env | {"secret_key": "x" * 32})
    opts = KubeOptions.from_options(spawner_config(settings).options)
    spec = AppSpec("0f7e3f9a-aaaa-4bbb-8ccc-00000000000a", "d1", "alice", "u1", "DetailedProfiler", "default")
    deployment = make_deployment(spec, opts)
    kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)

    policy = by_kind(rendered, "NetworkPolicy", "app")
    assert deployment["metadata"]["namespace"] == policy["metadata"]["namespace"] == FULL["apps"]["namespace"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    hub_labels = by_kind(rendered, "Deployment", "hub")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"].items() <= hub_labels.items()
    assert (
        deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        == "registry.example.com/profilerhub:0.1.0"
    )


def test_a_generated_admin_token_looks_like_every_other_token() -> None:
    import base64

    from profilerhub_core.security import TOKEN_PREFIX

    secret = by_kind(objects(REQUIRED), "Secret", "secrets")
    token = base64.b64decode(secret["data"]["PROFILERHUB_ADMIN_TOKEN"]).decode()
    assert token.startswith(TOKEN_PREFIX) and len(token) == len(TOKEN_PREFIX) + 43
    assert len(base64.b64decode(secret["data"]["PROFILERHUB_SECRET_KEY"])) == 48
