"""A FAKE Kubernetes API server for tests: an in-process HTTP server speaking the few REST
endpoints the Kubernetes spawner uses, with the official client pointed at it.

It is not Kubernetes: there is no scheduler and no kubelet, only a stand-in that gives each
Deployment one pod whose state the fake's ``pod_state`` decides.  What it does hold to is what
the spawner relies on: objects by namespace and name, ``uid`` on create, 409 ``AlreadyExists``
on a second create, 404 ``NotFound``, equality label selectors on lists, and a create refused
(422) unless the body validates against the Kubernetes schema (``kubernetes-validate``), as a
real API server refuses a malformed object.  Like a kubelet, it keeps a pod whose container
needs a Secret (a ``secretKeyRef`` that is not optional) that is missing, or a key missing from
it, in ``CreateContainerConfigError`` with the kubelet's message; ``add_secret`` is the
operator's ``kubectl create secret``.

The fakes are named for how they misbehave (after JupyterHub's ``never_spawn`` & co.):

    FakeKubeAPI                 pods become ready at once (a healthy cluster)
    FlakyFakeKubeAPI            answers 500 to the first ``failures`` calls of each method+path
    NeverReadyFakeKubeAPI       pods stay ContainerCreating forever
    ImagePullFailsFakeKubeAPI   pods wait in ImagePullBackOff
    DownFakeKubeAPI             every call answers 503 (an API server that is down)
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

KUBERNETES_VERSION = "1.37.0"

_ROUTES = {
    ("apis", "apps", "v1", "deployments"): "Deployment",
    ("api", "v1", "services"): "Service",
    ("api", "v1", "pods"): "Pod",
    ("api", "v1", "secrets"): "Secret",
}


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": reason,
        "message": message,
        "code": code,
    }


def matches(labels: dict[str, str], selector: str) -> bool:
    """Equality-based label selectors (``a=b,c=d``), all the spawner uses."""
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


class FakeKubeAPI:
    """The well-behaved fake: every Deployment's pod is ready as soon as it is asked about."""

    validate = True

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.calls: Counter[tuple[str, str]] = Counter()
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                code, answer = fake.handle(method, self.path, body)
                self._answer(code, answer)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="fake-kube-api", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeKubeAPI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- how this fake behaves (subclasses misbehave here) ----------------------------------

    def misbehave(self, method: str, path: str) -> tuple[int, dict[str, Any]] | None:
        """An answer that replaces the real one, or None."""
        return None

    def pod_state(self, deployment: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """``(ready, container state)`` of the deployment's pod: running, unless a Secret it
        needs is missing."""
        missing = self.missing_secret(deployment)
        if missing:
            return False, {"waiting": {"reason": "CreateContainerConfigError", "message": missing}}
        return True, {"running": {"startedAt": "2026-01-01T00:00:00Z"}}

    def missing_secret(self, deployment: dict[str, Any]) -> str | None:
        """The kubelet's message for the first required Secret (or key) the pod lacks, else None."""
        namespace = deployment["metadata"]["namespace"]
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            for item in container.get("env") or []:
                ref = (item.get("valueFrom") or {}).get("secretKeyRef")
                if not ref or ref.get("optional"):
                    continue
                secret = self.objects.get(("Secret", namespace, ref["name"]))
                if secret is None:
                    return f'secret "{ref["name"]}" not found'
                if ref["key"] not in {**(secret.get("data") or {}), **(secret.get("stringData") or {})}:
                    return f"couldn't find key {ref['key']} in Secret {namespace}/{ref['name']}"
        return None

    # -- what tests look at ------------------------------------------------------------------

    def names(self, kind: str, namespace: str = "default") -> set[str]:
        with self.lock:
            return {name for (k, ns, name) in self.objects if k == kind and ns == namespace}

    def get(self, kind: str, name: str, namespace: str = "default") -> dict[str, Any] | None:
        with self.lock:
            return self.objects.get((kind, namespace, name))

    def add_secret(self, name: str, data: dict[str, str], namespace: str = "default") -> None:
        """What an operator's ``kubectl create secret generic`` leaves (values base64-encoded)."""
        import base64

        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        with self.lock:
            self.objects[("Secret", namespace, name)] = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4())},
                "type": "Opaque",
                "data": encoded,
            }

    def remove(self, kind: str, name: str, namespace: str = "default") -> None:
        """Delete an object behind the spawner's back (an operator's kubectl delete)."""
        with self.lock:
            self.objects.pop((kind, namespace, name), None)

    # -- the API -----------------------------------------------------------------------------

    def handle(self, method: str, raw_path: str, body: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
        url = urlsplit(raw_path)
        self.calls[(method, url.path)] += 1
        replaced = self.misbehave(method, url.path)
        if replaced is not None:
            return replaced
        parts = [p for p in url.path.split("/") if p]
        # /api/v1/namespaces/{ns}/{plural}[/{name}] or /apis/apps/v1/namespaces/{ns}/{plural}[/{name}]
        try:
            at = parts.index("namespaces")
        except ValueError:
            return 404, _status(404, "NotFound", f"no route {url.path}")
        prefix, rest = tuple(parts[:at]), parts[at + 1 :]
        if len(rest) < 2 or (*prefix, rest[1]) not in _ROUTES:
            return 404, _status(404, "NotFound", f"no route {url.path}")
        kind = _ROUTES[(*prefix, rest[1])]
        namespace, name = rest[0], (rest[2] if len(rest) > 2 else None)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        with self.lock:
            if method == "POST" and name is None:
                return self._create(kind, namespace, body or {})
            if method == "GET" and name is None:
                return 200, self._list(kind, namespace, query.get("labelSelector", ""))
            if method == "GET" and name is not None:
                found = self._read(kind, namespace, name)
                if found is None:
                    return 404, _status(404, "NotFound", f'{kind.lower()}s "{name}" not found')
                return 200, found
            if method == "DELETE" and name is not None:
                if self.objects.pop((kind, namespace, name), None) is None:
                    return 404, _status(404, "NotFound", f'{kind.lower()}s "{name}" not found')
                return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
        return 405, _status(405, "MethodNotAllowed", f"{method} {url.path}")

    def _create(self, kind: str, namespace: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        name = (body.get("metadata") or {}).get("name", "")
        if body.get("kind") != kind or (body.get("metadata") or {}).get("namespace", namespace) != namespace:
            return 400, _status(400, "BadRequest", "kind or namespace does not match the URL")
        if self.validate:
            import kubernetes_validate

            try:
                kubernetes_validate.validate(body, KUBERNETES_VERSION, strict=True)
            except kubernetes_validate.ValidationError as exc:
                return 422, _status(422, "Invalid", f"{kind} {name} is invalid: {exc.message}")
        if (kind, namespace, name) in self.objects:
            return 409, _status(409, "AlreadyExists", f'{kind.lower()}s "{name}" already exists')
        stored = json.loads(json.dumps(body))
        stored["metadata"].update(uid=str(uuid.uuid4()), namespace=namespace)
        self.objects[(kind, namespace, name)] = stored
        return 201, stored

    def _read(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.objects.get((kind, namespace, name))
        if found is None:
            return None
        if kind == "Deployment":
            ready, _ = self.pod_state(found)
            found["status"] = {"replicas": 1, "readyReplicas": 1 if ready else 0}
        return found

    def _list(self, kind: str, namespace: str, selector: str) -> dict[str, Any]:
        if kind == "Pod":
            items = self._pods(namespace)
        else:
            items = [obj for (k, ns, _), obj in self.objects.items() if k == kind and ns == namespace]
        chosen = [obj for obj in items if matches(obj["metadata"].get("labels") or {}, selector)]
        return {"kind": f"{kind}List", "apiVersion": "v1", "metadata": {}, "items": chosen}

    def _pods(self, namespace: str) -> list[dict[str, Any]]:
        """One pod per Deployment (the fake's whole scheduler and kubelet)."""
        pods = []
        for (kind, ns, name), deployment in self.objects.items():
            if kind != "Deployment" or ns != namespace:
                continue
            ready, state = self.pod_state(deployment)
            template = deployment["spec"]["template"]
            pods.append(
                {
                    "kind": "Pod",
                    "apiVersion": "v1",
                    "metadata": {
                        "name": f"{name}-7d9f-x1",
                        "namespace": ns,
                        "labels": template["metadata"]["labels"],
                    },
                    "spec": template["spec"],
                    "status": {
                        "phase": "Running" if "running" in state else "Pending",
                        "containerStatuses": [
                            {"name": "app", "ready": ready, "restartCount": 0, "state": state}
                        ],
                    },
                }
            )
        return pods


class FlakyFakeKubeAPI(FakeKubeAPI):
    """Answers 500 to the first ``failures`` calls of each method and path, then behaves."""

    def __init__(self, failures: int = 2) -> None:
        super().__init__()
        self.failures = failures
        self.failed: Counter[tuple[str, str]] = Counter()

    def misbehave(self, method: str, path: str) -> tuple[int, dict[str, Any]] | None:
        if self.failed[(method, path)] < self.failures:
            self.failed[(method, path)] += 1
            return 500, _status(500, "InternalError", "etcdserver: request timed out")
        return None


class NeverReadyFakeKubeAPI(FakeKubeAPI):
    """Pods stay ``ContainerCreating``: the spawner's start must time out and clean up."""

    def pod_state(self, deployment: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        return False, {"waiting": {"reason": "ContainerCreating"}}


class ImagePullFailsFakeKubeAPI(FakeKubeAPI):
    """Pods wait in ``ImagePullBackOff``: start must fail at once, saying so."""

    def pod_state(self, deployment: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        return False, {
            "waiting": {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}
        }


class DownFakeKubeAPI(FakeKubeAPI):
    """Every call answers 503, as an API server that is down or overloaded."""

    def misbehave(self, method: str, path: str) -> tuple[int, dict[str, Any]] | None:
        return 503, _status(503, "ServiceUnavailable", "the server is currently unable to handle the request")


__all__ = [
    "DownFakeKubeAPI",
    "FakeKubeAPI",
    "FlakyFakeKubeAPI",
    "ImagePullFailsFakeKubeAPI",
    "NeverReadyFakeKubeAPI",
    "matches",
]
