"""A real HTTP server that receives webhooks, for the tests: it records each request (headers,
body) and answers with the statuses it was told to, in order (then 200).

    with WebhookReceiver(statuses=[500]) as receiver:
        ...                                # receiver.url: http://127.0.0.1:<port>/hook
        receiver.wait_for(1)               # the requests so far, once there is one
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.hub import wait_for


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class WebhookReceiver:
    def __init__(self, statuses: list[int] | None = None) -> None:
        self.statuses = list(statuses or [])
        self.received: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.received.append(Received(self.path, dict(self.headers.items()), body))
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_for(self, count: int, timeout: float = 120) -> list[Received]:
        wait_for(lambda: len(self.received) >= count, f"{count} webhook request(s)", timeout)
        with self._lock:
            return list(self.received)
