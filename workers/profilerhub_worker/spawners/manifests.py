"""Pure builders of the Kubernetes objects that make one app instance (after KubeSpawner's
``make_pod``): functions from an ``AppSpec`` and ``KubeOptions`` to plain dicts, tested without a
cluster and validated against Kubernetes' own schemas (``kubernetes-validate``).

One app is a Deployment (1 replica, ``Recreate``: never two pods of one app) and a ClusterIP
Service in front of it, both named ``ph-app-{app_id}`` and labelled::

    app.kubernetes.io/name=profilerhub         app.kubernetes.io/component=app
    app.kubernetes.io/instance={release}       app.kubernetes.io/managed-by=profilerhub-worker
    profilerhub.io/app-id={app_id}             profilerhub.io/domain, profilerhub.io/user

The reconciler finds an installation's apps by the first four (``instance_selector``); the
chart's NetworkPolicy admits traffic to ``component=app`` pods from the hub pods only.
The pod runs as a non-root user with a read-only root filesystem (``/tmp`` is an emptyDir), no
privilege escalation and every capability dropped; its readiness probe is the app's health
endpoint, so "ready" means what the local spawner's health check means.

Secrets: the worker's storage credentials never enter the spec.  An app pod's ``AWS_*`` come from
a Secret, by reference (``secretKeyRef``), either

* per owner (``app_storage_secret_template``, e.g. ``ph-storage-{user_id}``): the operator keeps one
  Secret per user whose credentials can read only ``{prefix}/{domain_id}/{user_id}/`` (an IAM or
  MinIO policy); the key id and secret key are required, so a missing Secret keeps the pod in
  ``CreateContainerConfigError`` and the start fails saying which Secret; or
* shared (``app_storage_secret``): the same credentials in every app pod (optional keys).

The app holds no signing key: it gets the hub's *public* key (``PROFILERHUB_APP_PUBLIC_KEY``) and
only verifies tokens; the private key stays in the hub's Secret.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from profilerhub_core.domain_settings import quantity_value
from profilerhub_worker.spawners.base import AppSpec, SpawnError, app_arguments

APP_PORT = 8888
APP_UID = 10001
NAME = "profilerhub"
COMPONENT = "app"
MANAGED_BY = "profilerhub-worker"
LABEL_APP_ID = "profilerhub.io/app-id"
LABEL_DOMAIN = "profilerhub.io/domain"
LABEL_USER = "profilerhub.io/user"
# Credentials the app reads from the storage Secret (boto3's usual variables).
STORAGE_SECRET_KEYS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
)
#: The keys a per-owner Secret must hold (the others stay optional).
REQUIRED_OWNER_SECRET_KEYS = frozenset({"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"})
_SECRET_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")  # a DNS-1123 subdomain


@dataclass(frozen=True)
class KubeOptions:
    """The Kubernetes spawner's settings (``PROFILERHUB_K8S_*``; see ``profilerhub_core.settings``)."""

    app_image: str
    namespace: str = "default"
    release: str = NAME
    api_url: str = ""
    image_pull_policy: str = "IfNotPresent"
    app_service_account: str = ""
    app_cpu_request: str = "100m"
    app_memory_request: str = "256Mi"
    app_cpu_limit: str = "1"
    app_memory_limit: str = "1Gi"
    app_storage_secret: str = ""
    app_storage_secret_template: str = ""
    api_retries: int = 5

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> KubeOptions:
        """From ``SpawnerConfig.options`` (the ``k8s_*`` settings, prefix optional)."""
        known = {f.name for f in fields(cls)}
        values = {key.removeprefix("k8s_"): value for key, value in options.items()}
        return cls(**{key: value for key, value in values.items() if key in known})


def object_name(app_id: str) -> str:
    """The Deployment's and Service's name: a DNS label (app ids are lowercase UUIDs)."""
    return f"ph-app-{app_id}"


def instance_selector(opts: KubeOptions) -> str:
    """The label selector of every app object of this installation."""
    return (
        f"app.kubernetes.io/name={NAME},app.kubernetes.io/component={COMPONENT},"
        f"app.kubernetes.io/instance={opts.release},app.kubernetes.io/managed-by={MANAGED_BY}"
    )


def app_selector(app_id: str) -> dict[str, str]:
    """The labels that pick one app's pods (the Deployment's and Service's selector)."""
    return {"app.kubernetes.io/component": COMPONENT, LABEL_APP_ID: app_id}


def make_labels(spec: AppSpec, opts: KubeOptions) -> dict[str, str]:
    labels = {
        "app.kubernetes.io/name": NAME,
        "app.kubernetes.io/component": COMPONENT,
        "app.kubernetes.io/instance": opts.release,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "app.kubernetes.io/part-of": NAME,
        LABEL_APP_ID: spec.app_id,
    }
    # Domain and user names are already label-safe (1-63 of [A-Za-z0-9-]); orphans know neither.
    if spec.domain:
        labels[LABEL_DOMAIN] = spec.domain
    if spec.user:
        labels[LABEL_USER] = spec.user
    return labels


def storage_secret(spec: AppSpec, opts: KubeOptions) -> tuple[str, bool] | None:
    """The Secret the app's storage credentials come from and whether it is its owner's own
    (``app_storage_secret_template`` filled in), else the shared one; None when neither is set.

    Raises ``SpawnError`` when the filled-in template is not a valid Secret name."""
    if opts.app_storage_secret_template:
        name = opts.app_storage_secret_template.format(
            domain_id=spec.env.get("PROFILERHUB_APP_DOMAIN_ID", ""),
            user_id=spec.user_id,
        )
        if not _SECRET_NAME.match(name):
            raise SpawnError(
                f"the storage Secret name {name!r} (from k8s_app_storage_secret_template "
                f"{opts.app_storage_secret_template!r}) is not a valid Kubernetes name: lowercase letters, "
                "digits, '-' and '.', at most 253"
            )
        return name, True
    if opts.app_storage_secret:
        return opts.app_storage_secret, False
    return None


def make_env(spec: AppSpec, opts: KubeOptions) -> list[dict[str, Any]]:
    """The app container's environment: what the local spawner passes, minus any credential
    (those come from ``storage_secret``), plus where to listen inside the pod."""
    plain = {k: v for k, v in spec.env.items() if k not in STORAGE_SECRET_KEYS}
    plain.update(
        PROFILERHUB_APP_ID=spec.app_id,
        PROFILERHUB_APP_OWNER=spec.user,
        PROFILERHUB_APP_OWNER_ID=spec.user_id,
        PROFILERHUB_APP_DOMAIN=spec.domain,
        PROFILERHUB_APP_TYPE=spec.app_type,
        PROFILERHUB_APP_HOST="0.0.0.0",
        PROFILERHUB_APP_PORT=str(APP_PORT),
        PROFILERHUB_APP_CACHE_DIR="/tmp/profilerhub-cache",
        PYTHONUNBUFFERED="1",
        HOME="/tmp",
    )
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in sorted(plain.items())]
    secret = storage_secret(spec, opts)
    if secret is not None:
        name, per_owner = secret
        env += [
            {
                "name": key,
                "valueFrom": {
                    "secretKeyRef": {
                        "name": name,
                        "key": key,
                        "optional": not (per_owner and key in REQUIRED_OWNER_SECRET_KEYS),
                    }
                },
            }
            for key in STORAGE_SECRET_KEYS
        ]
    return env


def make_resources(opts: KubeOptions, domain: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """The pod's requests and limits: the domain's (``AppSpec.resources``) over the operator's.
    Where the two would cross (Kubernetes refuses a request above its limit) the domain's value
    wins: a domain limit below the operator's request lowers the request, a domain request above
    the operator's limit raises the limit."""
    own = domain or {}
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for kind in ("cpu", "memory"):
        request = own.get(f"{kind}_request") or getattr(opts, f"app_{kind}_request")
        limit = own.get(f"{kind}_limit") or getattr(opts, f"app_{kind}_limit")
        if request and limit and quantity_value(request) > quantity_value(limit):
            if own.get(f"{kind}_limit"):
                request = limit
            else:
                limit = request
        requests[kind], limits[kind] = request, limit
    resources = {
        "requests": {k: v for k, v in requests.items() if v},
        "limits": {k: v for k, v in limits.items() if v},
    }
    return {k: v for k, v in resources.items() if v}


def container_security_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": APP_UID,
        "runAsGroup": APP_UID,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "privileged": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def make_pod_template(spec: AppSpec, opts: KubeOptions, *, stop_grace: float = 5.0) -> dict[str, Any]:
    health = f"/apps/{spec.app_id}/health"
    pod_spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": max(1, math.ceil(stop_grace)),
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": APP_UID,
            "runAsGroup": APP_UID,
            "fsGroup": APP_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "app",
                "image": opts.app_image,
                "imagePullPolicy": opts.image_pull_policy,
                "command": ["profilerhub", "app", *app_arguments(spec.app_type)],
                "env": make_env(spec, opts),
                "ports": [{"name": "http", "containerPort": APP_PORT, "protocol": "TCP"}],
                "readinessProbe": {
                    "httpGet": {"path": health, "port": "http"},
                    "periodSeconds": 2,
                    "failureThreshold": 3,
                },
                "livenessProbe": {
                    "httpGet": {"path": health, "port": "http"},
                    "initialDelaySeconds": 30,
                    "periodSeconds": 10,
                    "failureThreshold": 6,
                },
                "resources": make_resources(opts, spec.resources),
                "securityContext": container_security_context(),
                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
            }
        ],
        "volumes": [{"name": "tmp", "emptyDir": {}}],
    }
    if opts.app_service_account:
        pod_spec["serviceAccountName"] = opts.app_service_account
    return {"metadata": {"labels": make_labels(spec, opts)}, "spec": pod_spec}


def make_deployment(spec: AppSpec, opts: KubeOptions, *, stop_grace: float = 5.0) -> dict[str, Any]:
    """The app's Deployment: one replica, recreated (never two pods of one app at once)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": object_name(spec.app_id),
            "namespace": opts.namespace,
            "labels": make_labels(spec, opts),
            "annotations": {
                "profilerhub.io/app-type": spec.app_type,
                "profilerhub.io/app-name": spec.app_name,
            },
        },
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "revisionHistoryLimit": 1,
            "selector": {"matchLabels": app_selector(spec.app_id)},
            "template": make_pod_template(spec, opts, stop_grace=stop_grace),
        },
    }


def make_service(spec: AppSpec, opts: KubeOptions) -> dict[str, Any]:
    """The app's ClusterIP Service; the hub proxies to ``endpoint(...)``."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": object_name(spec.app_id),
            "namespace": opts.namespace,
            "labels": make_labels(spec, opts),
        },
        "spec": {
            "type": "ClusterIP",
            "selector": app_selector(spec.app_id),
            "ports": [{"name": "http", "port": APP_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def endpoint(app_id: str, opts: KubeOptions) -> str:
    """Where the hub reaches the app: its Service's cluster DNS name."""
    return f"http://{object_name(app_id)}.{opts.namespace}.svc:{APP_PORT}"


__all__ = [
    "APP_PORT",
    "LABEL_APP_ID",
    "KubeOptions",
    "app_selector",
    "endpoint",
    "instance_selector",
    "make_deployment",
    "make_labels",
    "make_pod_template",
    "make_service",
    "object_name",
    "storage_secret",
]
