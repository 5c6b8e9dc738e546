"""KubernetesSpawner: each app is a Deployment (1 replica) plus a Service in one namespace.

Selected by settings alone: ``PROFILERHUB_SPAWNER=kubernetes`` with ``PROFILERHUB_K8S_APP_IMAGE``,
``PROFILERHUB_K8S_NAMESPACE`` and the other ``PROFILERHUB_K8S_*`` settings.  The objects are built
by the pure functions in ``manifests``; this module is the thin I/O around them, through the calls
of ``kube_api`` (each retried, with backoff, when the API answers 429 or 5xx or cannot be reached):

* create answering 409 means "already exists": the existing object is adopted, so a start
  retried after a crash (this worker's or another's) finds the instance it began;
* delete answering 404 means "done";
* ``start`` returns once the app's pod is ready: the pod's readiness probe is the app's health
  endpoint, checked by the kubelet (the worker need not reach the pod itself).  It learns that
  the way an informer does, list then watch: read the Deployment and list the pods, then watch
  the pods from the list's ``resourceVersion``; a watch that ends (``WATCH_SECONDS`` at most, or a
  proxy cutting it), fails, or answers 410 Gone (its version was compacted away) is followed by a
  fresh list, and a new watch from there, so no change between the two is missed.  A watch that
  ends at once or fails backs off before the next list, so a broken watch endpoint degrades to
  slow polling, never to a busy loop.
* ``poll`` of a running app answers from this process's one list-then-watch of all the
  installation's app Deployments (``kube_watch``), without a read per app; it reads only what the
  watch cannot vouch for (an app not shown ready there, or a watch that is not current).

State on the app row: ``{"version": 1, "kind": "kubernetes", "namespace", "name", "uid"}``. The
uid tells the instance this row started from one created later under the same name.  The
reconciler's orphan sweep lists the installation's Deployments by label (``list_instances``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator
from typing import Any, ClassVar

from profilerhub_worker.spawners.base import AppSpec, Spawner, SpawnerConfig, SpawnError, wait_for
from profilerhub_worker.spawners.kube_api import KubeAPI, KubeAPIError, WatchEnded
from profilerhub_worker.spawners.kube_watch import (
    WATCH_BACKOFF_MAX_S,
    WATCH_BACKOFF_START_S,
    deployment_watch,
)
from profilerhub_worker.spawners.manifests import (
    LABEL_APP_ID,
    KubeOptions,
    endpoint,
    instance_selector,
    make_deployment,
    make_service,
    object_name,
)

log = logging.getLogger(__name__)

# Pod states that will not get better by waiting: start fails at once, poll reports them.
FATAL_WAITING_REASONS = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CrashLoopBackOff"}
)
_STOP_WAIT = 30.0
#: The longest one watch of an app's pods is asked to last before a fresh list.
WATCH_SECONDS = 30


def pod_problem(pods: list[dict[str, Any]]) -> str | None:
    """Why the app's pods cannot become ready, if waiting will not help; else None."""
    for pod in pods:
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        for status in statuses:
            waiting = (status.get("state") or {}).get("waiting") or {}
            reason = waiting.get("reason")
            if reason in FATAL_WAITING_REASONS:
                message = waiting.get("message") or ""
                name = (pod.get("metadata") or {}).get("name", "?")
                return f"pod {name}: {reason}{': ' + message if message else ''}"[:400]
    return None


def _ready(deployment: dict[str, Any]) -> bool:
    return int((deployment.get("status") or {}).get("readyReplicas") or 0) >= 1


def pod_ready(pod: dict[str, Any]) -> bool:
    """Whether the pod's ``Ready`` condition is true (its readiness probe passes)."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _terminating(pod: dict[str, Any]) -> bool:
    """A pod on its way out (``deletionTimestamp`` set): neither the new one ready nor its failure."""
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


class KubernetesSpawner(Spawner):
    """Runs the app as a Deployment + Service.  State: ``namespace``, ``name``, ``uid``."""

    kind: ClassVar[str] = "kubernetes"
    state_version: ClassVar[int] = 1

    def __init__(self, spec: AppSpec | None, config: SpawnerConfig, *, app_id: str | None = None) -> None:
        super().__init__(spec, config, app_id=app_id)
        self.opts = KubeOptions.from_options(config.options)
        self.name: str | None = None
        self.uid: str | None = None
        self._api: KubeAPI | None = None

    @property
    def api(self) -> KubeAPI:
        if self._api is None:
            self._api = KubeAPI(self.opts)
        return self._api

    @property
    def endpoint(self) -> str:
        return endpoint(self.app_id, self.opts)

    @property
    def pod_selector(self) -> str:
        return f"app.kubernetes.io/component=app,{LABEL_APP_ID}={self.app_id}"

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> str:
        try:
            return self._start()
        except KubeAPIError as exc:
            self._stop_quietly()
            raise SpawnError(f"could not create the app's Kubernetes objects: {exc}") from exc

    def _start(self) -> str:
        spec = self.require_spec()
        name = object_name(self.app_id)
        deployment = make_deployment(spec, self.opts, stop_grace=self.config.stop_grace)  # may refuse
        self.api.create(self.api.core.create_namespaced_service, make_service(spec, self.opts))
        created = self.api.create(self.api.apps.create_namespaced_deployment, deployment)
        if created is None:  # 409: an earlier attempt made it; adopt it
            created = self.api.read_deployment(name)
            if created is None:
                raise KubeAPIError(404, f"deployment {name} vanished while being adopted")
            log.info("adopting existing deployment %s for app %s", name, self.app_id)
        self.name = name
        self.uid = (created.get("metadata") or {}).get("uid")

        problem = self._wait_ready(name, self.config.start_timeout + self.config.http_timeout)
        if problem:
            self._stop_quietly()
            raise SpawnError(problem)
        return self.endpoint

    def _wait_ready(self, name: str, timeout: float) -> str | None:
        """Until the app's pod is ready (None) or cannot be (why), by list-then-watch (module doc)."""
        deadline = time.monotonic() + timeout
        backoff = WATCH_BACKOFF_START_S
        while True:
            deployment = self.api.read_deployment(name)
            if deployment is None:
                return f"deployment {name} was deleted during start"
            if _ready(deployment):
                return None
            pods, version = self.api.list_at(self.api.core.list_namespaced_pod, self.pod_selector)
            pods = [pod for pod in pods if not _terminating(pod)]  # one left by an earlier, timed-out stop
            found = pod_problem(pods)
            if found:
                return found
            if any(pod_ready(pod) for pod in pods):
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return f"the app's pod was not ready within {timeout:g}s"
            opened, events = time.monotonic(), 0
            try:
                for event in self.api.watch(
                    self.api.core.list_namespaced_pod,
                    self.pod_selector,
                    version,
                    max(1, min(WATCH_SECONDS, math.ceil(left))),
                ):
                    events += 1
                    pod = event.get("object") or {}
                    if event.get("type") == "DELETED" or _terminating(pod):
                        continue
                    found = pod_problem([pod])
                    if found:
                        return found
                    if pod_ready(pod):
                        return None
                    if time.monotonic() >= deadline:
                        break
            except WatchEnded as exc:
                log.info("watching the pods of app %s: %s; listing again", self.app_id, exc)
                if exc.status == 410:
                    continue  # too old a version: a fresh list gives a current one, at once
                events = 0
            if events == 0 and time.monotonic() - opened < 1.0:  # failed or cut at once: back off
                time.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
                backoff = min(backoff * 2, WATCH_BACKOFF_MAX_S)
            else:
                backoff = WATCH_BACKOFF_START_S

    def poll(self) -> int | str | None:
        """Running (``None``) when this process's watch of the app Deployments shows this one
        ready, without a read; otherwise, or while that watch is not current, from a read of the
        Deployment (and of its pods, when it is not ready): see ``kube_watch``."""
        if self.name is None:
            return 0
        watched = deployment_watch(self.opts).deployment(self.name)
        if watched is not None and self._ours(watched) and _ready(watched):
            return None
        deployment = self.api.read_deployment(self.name)
        if deployment is None:
            return f"deployment {self.name} is gone"
        if not self._ours(deployment):
            return f"deployment {self.name} was replaced by another"
        if _ready(deployment):
            return None
        return pod_problem(self.api.list_pods(self.pod_selector))

    def _ours(self, deployment: dict[str, Any]) -> bool:
        """Whether ``deployment`` is the one this app started (not one made later under its name)."""
        return not self.uid or (deployment.get("metadata") or {}).get("uid") == self.uid

    def stop(self) -> None:
        name = object_name(self.app_id)
        self.api.delete(self.api.apps.delete_namespaced_deployment, name)
        self.api.delete(self.api.core.delete_namespaced_service, name)
        if not wait_for(
            lambda: not self.api.list_pods(self.pod_selector), self.config.stop_grace + _STOP_WAIT
        ):
            log.warning("pods of app %s still terminating after its deployment was deleted", self.app_id)
        self.clear_state()

    def _stop_quietly(self) -> None:
        try:
            self.stop()
        except KubeAPIError as exc:  # the reconciler's orphan sweep removes it later
            log.warning("could not remove the objects of app %s: %s", self.app_id, exc)

    # -- state -------------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        if self.name is not None:
            state.update(namespace=self.opts.namespace, name=self.name, uid=self.uid)
        return state

    def load_state(self, state: dict[str, Any] | None) -> None:
        if not state or not self.state_matches(state) or state.get("namespace") != self.opts.namespace:
            return
        self.name = state.get("name")
        self.uid = state.get("uid")

    @classmethod
    def instance_identity(cls, state: dict[str, Any] | None) -> object:
        state = state or {}
        return (state.get("namespace"), state.get("name"), state.get("uid"))

    def clear_state(self) -> None:
        self.name = self.uid = None

    @classmethod
    def list_instances(cls, config: SpawnerConfig) -> Iterator[tuple[str, dict[str, Any]]]:
        opts = KubeOptions.from_options(config.options)
        for deployment in KubeAPI(opts).list_deployments(instance_selector(opts)):
            metadata = deployment.get("metadata") or {}
            app_id = (metadata.get("labels") or {}).get(LABEL_APP_ID)
            if not app_id:
                continue
            yield (
                app_id,
                {
                    "version": cls.state_version,
                    "kind": cls.kind,
                    "namespace": opts.namespace,
                    "name": metadata.get("name"),
                    "uid": metadata.get("uid"),
                },
            )


__all__ = [
    "WATCH_SECONDS",
    "KubeAPI",
    "KubeAPIError",
    "KubernetesSpawner",
    "WatchEnded",
    "pod_problem",
    "pod_ready",
]
