"""FakeHub: a STAND-IN for the hub's job routes, for testing the SDK before those routes exist.

It implements exactly the "Hub upload protocol" of ``docs/sdk.md`` (``GET /api/v1/me``, create a
job, ``PUT …/files/{path}``, ``POST …/uploads`` presigned grants, ``POST …/complete``) over real
HTTP on a free port, keeps everything in memory, and can misbehave on purpose:

- ``stop()`` / ``start()``: the hub goes down (connections refused) and comes back on the same port;
- a wrong bearer token answers 401 like the real hub;
- ``mode="s3"`` hands out presigned PUT URLs for a real (moto) S3 bucket instead of taking files;
- ``refuse[path] = status`` answers that file's upload with an error;
- ``stalled.set()`` makes it accept requests and never answer (until cleared or stopped).
"""

from __future__ import annotations

import collections
import contextlib
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

JOBS = re.compile(r"^/api/v1/domains/(?P<domain>[^/]+)/users/(?P<user>[^/]+)/jobs$")
JOB = re.compile(
    r"^/api/v1/domains/(?P<domain>[^/]+)/users/(?P<user>[^/]+)/jobs/(?P<job>[^/]+)(?P<rest>/.*)?$"
)


@dataclass
class FakeJob:
    job_id: str
    name: str
    metric_definitions: list[dict[str, str]] | None
    status: str = "InProgress"
    files: dict[str, bytes] = field(default_factory=dict)
    puts: collections.Counter[str] = field(default_factory=collections.Counter)
    completions: int = 0
    reports: list[Any] = field(default_factory=list)  # the body of each complete (None: none)


class FakeHub:
    """The stand-in hub; ``url`` stays the same across ``stop()``/``start()``."""

    def __init__(
        self,
        token: str = "good-token",
        *,
        user: str = "alice",
        domain: str = "research",
        mode: str = "hub",
        s3: dict[str, str] | None = None,
        bucket: str | None = None,
    ) -> None:
        self.token = token
        self.user = user
        self.domain = domain
        self.mode = mode
        self.s3 = s3
        self.bucket = bucket
        self.jobs: dict[str, FakeJob] = {}
        self.refuse: dict[str, int] = {}  # file path -> status to answer its PUT with (misbehaving storage)
        self.stalled = threading.Event()  # set: requests hang (accepted, never answered) until cleared
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status)
        self.lock = threading.Lock()
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self._conns: set[socket.socket] = set()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        hub = self

        class Handler(_Handler):
            fake = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="fakehub", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Go down: the port stops accepting connections until ``start()``."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self.lock:  # keep-alive connections too: a dead hub answers nothing
            conns, self._conns = list(self._conns), set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def job_named(self, name: str) -> FakeJob:
        with self.lock:
            matches = [j for j in self.jobs.values() if j.name == name]
        assert len(matches) == 1, (
            f"expected one job named {name!r}, hub has {[j.name for j in self.jobs.values()]}"
        )
        return matches[0]

    def s3_key(self, job: FakeJob, path: str) -> str:
        return f"hub/{self.domain}/{self.user}/jobs/{job.job_id}/raw/{path}"


def after_closing_calls() -> None:
    """Wait until a finished run's closing call (``complete``, left to its thread when
    ``ph.finish``'s time was up) has ended. A test that brings a hub back after such a run does
    so after this: a try of that call already under way when the run closed its client may still
    reach a hub back by then (seen in CI under load: the job completed behind the run's back,
    before its spilled files could reach it)."""
    from profilerhub._uploader import CLOSING_THREAD

    closing = lambda: [t for t in threading.enumerate() if t.name == CLOSING_THREAD]  # noqa: E731
    wait_for(lambda: not closing(), timeout=60, what="the run's closing call to end")


def wait_for(condition: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Poll ``condition`` until it is truthy; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        with self.fake.lock:
            self.fake._conns.add(self.connection)

    def finish(self) -> None:
        with self.fake.lock:
            self.fake._conns.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def _dispatch(self, method: str) -> None:
        while self.fake.stalled.is_set() and self.fake._server is not None:
            time.sleep(0.02)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = urlsplit(self.path).path
        status, payload = self._route(method, path, body)
        with self.fake.lock:
            self.fake.requests.append((method, path, status))
        data = json.dumps(payload).encode() if payload is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        hub = self.fake
        if self.headers.get("Authorization") != f"Bearer {hub.token}":
            return 401, _err("Unauthorized", "invalid or missing token")
        if method == "GET" and path == "/api/v1/me":
            return 200, {"user": hub.user, "domain": hub.domain, "role": "user"}
        m = JOBS.match(path)
        if m and method == "POST":
            if (m["domain"], m["user"]) != (hub.domain, hub.user):
                return 404, _err("ResourceNotFound", "no such user")
            req = json.loads(body or b"{}")
            job = FakeJob(uuid.uuid4().hex[:12], req["name"], req.get("metric_definitions"))
            with hub.lock:
                hub.jobs[job.job_id] = job
            upload: dict[str, Any] = {"mode": hub.mode}
            if hub.mode == "hub":
                upload["base_url"] = f"{hub.url}{path}/{job.job_id}/files/"
            return 201, {"job_id": job.job_id, "name": job.name, "status": job.status, "upload": upload}
        m = JOB.match(path)
        if not m or (m["domain"], m["user"]) != (hub.domain, hub.user) or m["job"] not in hub.jobs:
            return 404, _err("ResourceNotFound", f"no route or job for {path}")
        job, rest = hub.jobs[m["job"]], m["rest"] or ""
        if method == "GET" and rest == "":
            return 200, {"job_id": job.job_id, "name": job.name, "status": job.status}
        if method == "PUT" and rest.startswith("/files/"):
            rel = unquote(rest[len("/files/") :])
            if any(p in ("", ".", "..") for p in rel.split("/")):
                return 400, _err("ValidationError", f"unsafe path {rel!r}")
            if job.status != "InProgress":
                return 409, _err("ResourceInUse", "job is complete")
            if rel in hub.refuse:
                return hub.refuse[rel], _err("ValidationError", f"refusing {rel} (FakeHub.refuse)")
            with hub.lock:
                job.files[rel] = body
                job.puts[rel] += 1
            return 201, {"path": rel, "size": len(body)}
        if method == "POST" and rest == "/uploads":
            req = json.loads(body or b"{}")
            return 200, self._presign(job, req["path"])
        if method == "POST" and rest == "/complete":
            with hub.lock:
                job.completions += 1
                job.reports.append(json.loads(body) if body else None)
                job.status = "Processing"
            return 202, {"job_id": job.job_id, "status": job.status}
        return 405, _err("MethodNotAllowed", f"{method} {path}")

    def _presign(self, job: FakeJob, rel: str) -> dict[str, Any]:
        import boto3

        hub = self.fake
        assert hub.s3 is not None and hub.bucket is not None, "mode='s3' needs s3= and bucket="
        client = boto3.client(
            "s3",
            endpoint_url=hub.s3["endpoint_url"],
            region_name=hub.s3["region"],
            aws_access_key_id=hub.s3["access_key"],
            aws_secret_access_key=hub.s3["secret_key"],
        )
        url = client.generate_presigned_url(
            "put_object", Params={"Bucket": hub.bucket, "Key": hub.s3_key(job, rel)}, ExpiresIn=600
        )
        with hub.lock:
            job.puts[rel] += 1
        return {"url": url, "method": "PUT", "headers": {}}


def _err(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}
