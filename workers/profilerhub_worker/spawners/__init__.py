"""Spawners start, poll and stop app instances; see ``base.Spawner`` for the contract."""

from __future__ import annotations

import importlib

from profilerhub_worker.spawners.base import AppSpec, Spawner, SpawnerConfig, SpawnError
from profilerhub_worker.spawners.local import LocalProcessSpawner

SPAWNERS: dict[str, str] = {
    "local": "profilerhub_worker.spawners.local:LocalProcessSpawner",
    "kubernetes": "profilerhub_worker.spawners.kubernetes:KubernetesSpawner",
}


def spawner_class(name: str) -> type[Spawner]:
    """The spawner class named by a setting: a short name (``local``) or ``module:Class``."""
    path = SPAWNERS.get(name, name)
    module_name, sep, attr = path.partition(":")
    if not sep:
        raise ValueError(f"unknown spawner {name!r}: use one of {sorted(SPAWNERS)} or 'module:Class'")
    cls = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(cls, type) and issubclass(cls, Spawner)):
        raise ValueError(f"{path} is not a Spawner")
    return cls


def make_spawner(name: str, spec: AppSpec, config: SpawnerConfig, state: dict | None = None) -> Spawner:
    """Build the spawner for ``spec`` and load its saved ``state``."""
    spawner = spawner_class(name)(spec, config)
    spawner.load_state(state)
    return spawner


__all__ = [
    "AppSpec",
    "LocalProcessSpawner",
    "SPAWNERS",
    "SpawnError",
    "Spawner",
    "SpawnerConfig",
    "make_spawner",
    "spawner_class",
]
