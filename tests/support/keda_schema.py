"""JSON schemas for the two KEDA kinds the chart renders (``keda.sh/v1alpha1`` ScaledObject and
TriggerAuthentication), which kubernetes-validate does not know (they are custom resources).

Written here from KEDA's documented spec (v2: the ScaledObject spec and the Redis Lists scaler's
parameters), for the fields the chart may set; NOT KEDA's CRD. What they catch is what a cluster
with KEDA would refuse or misread: an unknown or misspelt field, a non-string trigger parameter
(trigger metadata is a map of strings), a Redis trigger without its list or target.
"""

from __future__ import annotations

from typing import Any

_NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63}
_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": _NAME, "namespace": _NAME, "labels": _STRINGS, "annotations": _STRINGS},
    "additionalProperties": False,
}
#: The Redis Lists scaler's parameters (``type: redis``).
REDIS_PARAMETERS = (
    "address",
    "addressFromEnv",
    "host",
    "hostFromEnv",
    "port",
    "portFromEnv",
    "usernameFromEnv",
    "passwordFromEnv",
    "listName",
    "listLength",
    "activationListLength",
    "enableTLS",
    "unsafeSsl",
    "databaseIndex",
)
_TRIGGER = {
    "type": "object",
    "required": ["type", "metadata"],
    "properties": {
        "type": {"type": "string"},
        "name": {"type": "string"},
        "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
        "useCachedMetrics": {"type": "boolean"},
        "metadata": _STRINGS,
        "authenticationRef": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": _NAME,
                "kind": {"enum": ["TriggerAuthentication", "ClusterTriggerAuthentication"]},
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
    "if": {"properties": {"type": {"const": "redis"}}},
    "then": {
        "properties": {
            "metadata": {
                "required": ["listName", "listLength"],
                "properties": {name: {"type": "string"} for name in REDIS_PARAMETERS},
                "additionalProperties": False,
                "anyOf": [
                    {"required": ["address"]},
                    {"required": ["addressFromEnv"]},
                    {"required": ["host"]},
                ],
            }
        }
    },
}
_COUNT = {"type": "integer", "minimum": 0}


def _resource(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The schema of a ``keda.sh/v1alpha1`` object of ``kind`` whose spec is ``spec``."""
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "keda.sh/v1alpha1"},
            "kind": {"const": kind},
            "metadata": _METADATA,
            "spec": spec,
        },
        "additionalProperties": False,
    }


SCALED_OBJECT = _resource(
    "ScaledObject",
    {
        "type": "object",
        "required": ["scaleTargetRef", "triggers"],
        "properties": {
            "scaleTargetRef": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": _NAME,
                    "kind": {"type": "string"},
                    "apiVersion": {"type": "string"},
                    "envSourceContainerName": {"type": "string"},
                },
                "additionalProperties": False,
            },
            "pollingInterval": _COUNT,
            "cooldownPeriod": _COUNT,
            "initialCooldownPeriod": _COUNT,
            "idleReplicaCount": _COUNT,
            "minReplicaCount": _COUNT,
            "maxReplicaCount": _COUNT,
            "fallback": {
                "type": "object",
                "required": ["failureThreshold", "replicas"],
                "properties": {"failureThreshold": _COUNT, "replicas": _COUNT},
                "additionalProperties": False,
            },
            "advanced": {"type": "object"},
            "triggers": {"type": "array", "minItems": 1, "items": _TRIGGER},
        },
        "additionalProperties": False,
    },
)
TRIGGER_AUTHENTICATION = _resource(
    "TriggerAuthentication",
    {
        "type": "object",
        "properties": {
            "secretTargetRef": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["parameter", "name", "key"],
                    "properties": {
                        "parameter": {"type": "string"},
                        "name": _NAME,
                        "key": {"type": "string"},
                    },
                    "additionalProperties": False,
                },
            },
            "env": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["parameter", "name"],
                    "properties": {
                        "parameter": {"type": "string"},
                        "name": {"type": "string"},
                        "containerName": {"type": "string"},
                    },
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
)
SCHEMAS = {"ScaledObject": SCALED_OBJECT, "TriggerAuthentication": TRIGGER_AUTHENTICATION}
