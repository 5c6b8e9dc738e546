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

Watches (``GET …/pods?watch=true&resourceVersion=V``, and the same for ``deployments``) stream
newline-delimited events as the API server does.  Each list answers a fresh ``resourceVersion``
and remembers the objects it showed; a watch from that version sends ``ADDED``/``MODIFIED``/
``DELETED`` for every object that differs from what the list showed, then for every later change,
until ``timeoutSeconds`` (or until the test calls ``cut_watches``, an API server restarting).  A
version the fake does not know, or one of a list of another kind, answers the ``ERROR`` event with
a 410 ``Expired`` Status, as a compacted etcd does.  A Deployment's ``status.readyReplicas`` is
its pod's readiness, on reads, lists and watches alike.  When the fake stops, so do this
process's watches of it (``kube_watch.stop_watches``): they would outlive the test otherwise.

The fakes are named for how they misbehave (after JupyterHub's ``never_spawn`` & co.):

    FakeKubeAPI                 pods become ready at once (a healthy cluster)
    FlakyFakeKubeAPI            answers 500 to the first ``failures`` calls of each method+path
    NeverReadyFakeKubeAPI       pods stay ContainerCreating forever
    ImagePullFailsFakeKubeAPI   pods wait in ImagePullBackOff
    DownFakeKubeAPI             every call answers 503 (an API server that is down)
    SlowStartFakeKubeAPI        pods stay ContainerCreating until the test sets ``ready`` (or ``fail``)
    GoneWatchFakeKubeAPI        ... and the first ``times`` watches answer 410 Gone (version compacted away)
    EndingWatchFakeKubeAPI      ... and the first ``times`` watches close at once, with no event
    BrokenWatchFakeKubeAPI      ... and the first ``times`` watches answer 500
    CrashingFakeKubeAPI         pods run until the test calls ``crash(name)``: that one's then crash-loops
    CutWatchFakeKubeAPI         ``cut_watches(then=...)`` ends the open watches; the next one misbehaves so
"""

from __future__ import annotations

import json
import threading
import time
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
            protocol_version = "HTTP/1.1"  # keep-alive, and chunked watch streams, as the API server

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
                if method == "GET" and parse_qs(urlsplit(self.path).query).get("watch") in (["true"], ["1"]):
                    fake.serve_watch(self)
                    return
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

        self.versions = 0  # the last resourceVersion a list answered
        self.listed: dict[str, tuple[str, dict[str, str]]] = {}  # version -> (kind, {name: JSON})
        self.cuts = 0  # how many times the test cut the open watches
        self.closing = threading.Event()
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
        from profilerhub_worker.spawners.kube_watch import stop_watches

        stop_watches(self.url)
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()

    # -- how this fake behaves (subclasses misbehave here) ----------------------------------

    def misbehave(self, method: str, path: str) -> tuple[int, dict[str, Any]] | None:
        """An answer that replaces the real one, or None (``method`` is ``WATCH`` for a watch)."""
        return None

    def watch_misbehaves(self, number: int) -> str | None:
        """How the ``number``-th watch (from 1) misbehaves: ``"gone"``, ``"end"``, ``"broken"`` or None."""
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

    def cut_watches(self) -> None:
        """End every open watch stream, as an API server restarting (or a proxy) does."""
        with self.lock:
            self.cuts += 1

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
        if found is None or kind != "Deployment":
            return found
        return self._with_status(found)

    def _with_status(self, deployment: dict[str, Any]) -> dict[str, Any]:
        """The Deployment with the status its one pod gives it."""
        ready, _ = self.pod_state(deployment)
        return {**deployment, "status": {"replicas": 1, "readyReplicas": 1 if ready else 0}}

    def _objects(self, kind: str, namespace: str) -> list[dict[str, Any]]:
        """What a list of ``kind`` shows: pods and Deployments as the fake's kubelet has them."""
        if kind == "Pod":
            return self._pods(namespace)
        items = [obj for (k, ns, _), obj in self.objects.items() if k == kind and ns == namespace]
        return [self._with_status(obj) for obj in items] if kind == "Deployment" else items

    def _list(self, kind: str, namespace: str, selector: str) -> dict[str, Any]:
        chosen = [
            obj
            for obj in self._objects(kind, namespace)
            if matches(obj["metadata"].get("labels") or {}, selector)
        ]
        self.versions += 1
        version = str(self.versions)
        self.listed[version] = (
            kind,
            {obj["metadata"]["name"]: json.dumps(obj, sort_keys=True) for obj in chosen},
        )
        metadata = {"resourceVersion": version}
        return {"kind": f"{kind}List", "apiVersion": "v1", "metadata": metadata, "items": chosen}

    # -- watches -----------------------------------------------------------------------------

    def serve_watch(self, handler: BaseHTTPRequestHandler) -> None:
        """Stream pod or Deployment events to one watch request (a chunked body that ends when
        the stream does)."""
        url = urlsplit(handler.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        with self.lock:
            self.calls[("WATCH", url.path)] += 1
            number = self.calls[("WATCH", url.path)]
            cuts = self.cuts  # before the answer's headers: a cut after them ends this stream
        replaced = self.misbehave("WATCH", url.path)
        how = self.watch_misbehaves(number)
        if replaced is None and how == "broken":
            replaced = 500, _status(500, "InternalError", "etcdserver: leader changed")
        parts = [p for p in url.path.split("/") if p]
        kind = {"pods": "Pod", "deployments": "Deployment"}.get(parts[-1])
        if replaced is None and (kind is None or "namespaces" not in parts):
            replaced = (
                404,
                _status(404, "NotFound", f"the fake watches pods and deployments only, not {url.path}"),
            )
        if replaced is not None:
            body = json.dumps(replaced[1]).encode()
            handler.send_response(replaced[0])
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            return
        namespace = parts[parts.index("namespaces") + 1]
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        try:
            self._stream_events(handler, how, kind or "Pod", namespace, query, cuts)
            handler.wfile.write(b"0\r\n\r\n")  # the stream's end
        except OSError:  # the client went away
            handler.close_connection = True

    def _stream_events(
        self,
        handler: BaseHTTPRequestHandler,
        how: str | None,
        kind: str,
        namespace: str,
        query: dict[str, str],
        cuts: int,
    ) -> None:
        def send(kind: str, obj: dict[str, Any]) -> None:
            line = json.dumps({"type": kind, "object": obj}).encode() + b"\n"
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))  # one chunk per event
            handler.wfile.flush()

        with self.lock:
            listed_kind, sent = self.listed.get(query.get("resourceVersion", ""), ("", None))
        if how == "end":
            return
        if how == "gone" or sent is None or listed_kind != kind:
            send(
                "ERROR", _status(410, "Expired", f"too old resource version: {query.get('resourceVersion')}")
            )
            return
        sent = dict(sent)
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 30)
        selector = query.get("labelSelector", "")
        while time.monotonic() < deadline and not self.closing.is_set() and self.cuts == cuts:
            with self.lock:
                now = {
                    obj["metadata"]["name"]: obj
                    for obj in self._objects(kind, namespace)
                    if matches(obj["metadata"].get("labels") or {}, selector)
                }
            for name, obj in now.items():
                text = json.dumps(obj, sort_keys=True)
                if sent.get(name) != text:
                    send("MODIFIED" if name in sent else "ADDED", obj)
                    sent[name] = text
            for name in set(sent) - set(now):
                send("DELETED", json.loads(sent.pop(name)))
            self.closing.wait(0.02)

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
                        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                        "containerStatuses": [
                            {
                                "name": "app",
                                "image": template["spec"]["containers"][0]["image"],
                                "imageID": "",
                                "ready": ready,
                                "restartCount": 0,
                                "state": state,
                            }
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


class SlowStartFakeKubeAPI(FakeKubeAPI):
    """Pods stay ``ContainerCreating`` until the test sets ``ready`` (then run) or ``fail`` (then
    wait in ``ImagePullBackOff``): what the spawner learns in between, it learns from a watch."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = threading.Event()
        self.fail = threading.Event()

    def pod_state(self, deployment: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        if self.fail.is_set():
            return False, {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}
        if not self.ready.is_set():
            return False, {"waiting": {"reason": "ContainerCreating"}}
        return super().pod_state(deployment)


class LeftoverPodFakeKubeAPI(SlowStartFakeKubeAPI):
    """Beside each app's new pod, a ready one still terminating (an earlier stop that timed out):
    ready, but on its way out, so not the app's."""

    def _pods(self, namespace: str) -> list[dict[str, Any]]:
        pods = super()._pods(namespace)
        leftovers = []
        for pod in pods:
            old = json.loads(json.dumps(pod))
            old["metadata"]["name"] += "-old"
            old["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            old["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
            old["status"]["containerStatuses"][0].update(ready=True, state={"running": {}})
            leftovers.append(old)
        return pods + leftovers


class _FirstWatchesMisbehave(SlowStartFakeKubeAPI):
    """The first ``times`` watches misbehave as ``how`` says (``watch_misbehaves``)."""

    how = ""

    def __init__(self, times: int) -> None:
        super().__init__()
        self.times = times

    def watch_misbehaves(self, number: int) -> str | None:
        return self.how if number <= self.times else None


class GoneWatchFakeKubeAPI(_FirstWatchesMisbehave):
    """The first ``times`` watches answer an ``ERROR`` event with 410 Gone (version compacted)."""

    how = "gone"


class EndingWatchFakeKubeAPI(_FirstWatchesMisbehave):
    """The first ``times`` watches close at once with no event (a proxy cutting idle streams)."""

    how = "end"


class BrokenWatchFakeKubeAPI(_FirstWatchesMisbehave):
    """The first ``times`` watches answer 500 instead of a stream."""

    how = "broken"


class CrashingFakeKubeAPI(FakeKubeAPI):
    """Pods run until the test calls ``crash(deployment name)``; that Deployment's pod then waits in
    ``CrashLoopBackOff`` (the app process keeps dying), not ready."""

    def __init__(self) -> None:
        super().__init__()
        self.crashed: set[str] = set()

    def crash(self, name: str) -> None:
        with self.lock:
            self.crashed.add(name)

    def pod_state(self, deployment: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        if deployment["metadata"]["name"] in self.crashed:
            message = "back-off 10s restarting failed container=app"
            return False, {"waiting": {"reason": "CrashLoopBackOff", "message": message}}
        return super().pod_state(deployment)


class CutWatchFakeKubeAPI(FakeKubeAPI):
    """Watches stream until the test cuts them (``cut_watches(then=how)``); the next watch asked
    for then misbehaves as ``how`` says (``"gone"``, ``"end"``, ``"broken"``), after running
    ``meanwhile`` (a change made while no watch is open)."""

    def __init__(self) -> None:
        super().__init__()
        self.then: str | None = None
        self.meanwhile: Any = None

    def cut_watches(self, then: str | None = None, meanwhile: Any = None) -> None:
        with self.lock:
            self.then, self.meanwhile = then, meanwhile
        super().cut_watches()

    def watch_misbehaves(self, number: int) -> str | None:
        with self.lock:
            how, meanwhile = self.then, self.meanwhile
            self.then = self.meanwhile = None
        if meanwhile is not None:
            meanwhile()
        return how


__all__ = [
    "BrokenWatchFakeKubeAPI",
    "CrashingFakeKubeAPI",
    "CutWatchFakeKubeAPI",
    "DownFakeKubeAPI",
    "EndingWatchFakeKubeAPI",
    "GoneWatchFakeKubeAPI",
    "SlowStartFakeKubeAPI",
    "FakeKubeAPI",
    "FlakyFakeKubeAPI",
    "ImagePullFailsFakeKubeAPI",
    "NeverReadyFakeKubeAPI",
    "matches",
]
