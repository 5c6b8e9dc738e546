"""The few Kubernetes API calls the spawner and its watch make, through the official ``kubernetes``
client (raw JSON answers, no model classes):

* every call is retried (with backoff) when the API answers 429 or 5xx or cannot be reached;
* a 404 answers ``None``; other failures raise ``KubeAPIError`` (409 included: the caller
  decides what "already exists" means);
* a list answers its items and its ``resourceVersion``; a watch from that version streams the
  changes since, and is never retried here: it raises ``WatchEnded`` and the caller lists again.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from profilerhub_worker.spawners.manifests import KubeOptions

log = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Seconds to connect, and to wait for each answer (a watch: for each read of its stream, beyond its length).
REQUEST_TIMEOUT = 10.0

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


class KubeAPIError(Exception):
    """A Kubernetes API call failed for good (after retries); ``status`` is the HTTP status or 0."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"Kubernetes API: {status or 'unreachable'}: {message}")
        self.status = status


class WatchEnded(Exception):
    """A watch failed (``status`` 410: its resourceVersion is too old); list again, then watch."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"watch: {status or 'unreachable'}: {message}")
        self.status = status


def api_client(opts: KubeOptions) -> Any:
    """One ``kubernetes.client.ApiClient`` per API URL and process: the given URL, else the
    pod's service account, else ``~/.kube/config``."""
    from kubernetes import client, config

    with _clients_lock:
        if opts.api_url not in _clients:
            configuration = client.Configuration()
            if opts.api_url:
                configuration.host = opts.api_url
            else:
                try:
                    config.load_incluster_config(client_configuration=configuration)
                except config.ConfigException:
                    config.load_kube_config(client_configuration=configuration)
            configuration.retries = 0  # retried here, with backoff and a status-aware rule
            _clients[opts.api_url] = client.ApiClient(configuration)
        return _clients[opts.api_url]


class KubeAPI:
    """The few calls the spawner makes, each retried, each answering parsed JSON (or None for 404)."""

    def __init__(self, opts: KubeOptions) -> None:
        from kubernetes import client

        self.opts = opts
        api = api_client(opts)
        self.apps = client.AppsV1Api(api)
        self.core = client.CoreV1Api(api)

    def call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        """``method(*args, **kwargs)``; ``None`` when it answers 404, ``KubeAPIError`` for other
        errors (409 included: the caller decides what "already exists" means)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        delay = 0.1
        for attempt in range(1, self.opts.api_retries + 1):
            try:
                answer = method(*args, _preload_content=False, _request_timeout=REQUEST_TIMEOUT, **kwargs)
                return json.loads(answer.data or b"{}")
            except ApiException as exc:
                if exc.status == 404:
                    return None
                if exc.status not in RETRYABLE_STATUSES or attempt == self.opts.api_retries:
                    raise KubeAPIError(exc.status, _message(exc)) from exc
                error: Exception = exc
            except (HTTPError, OSError) as exc:
                if attempt == self.opts.api_retries:
                    raise KubeAPIError(0, str(exc)) from exc
                error = exc
            log.info("Kubernetes API call %s failed (%s); retrying", method.__name__, error)
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")

    def create(self, method: Callable[..., Any], body: dict[str, Any]) -> dict[str, Any] | None:
        """Create ``body``; ``None`` if it already exists (409)."""
        try:
            return self.call(method, self.opts.namespace, body)
        except KubeAPIError as exc:
            if exc.status == 409:
                return None
            raise

    def delete(self, method: Callable[..., Any], name: str) -> None:
        """Delete ``name``; absent (404) counts as deleted."""
        self.call(method, name, self.opts.namespace, propagation_policy="Background")

    def read_deployment(self, name: str) -> dict[str, Any] | None:
        return self.call(self.apps.read_namespaced_deployment, name, self.opts.namespace)

    def list_deployments(self, selector: str) -> list[dict[str, Any]]:
        return self.list_at(self.apps.list_namespaced_deployment, selector)[0]

    def list_pods(self, selector: str) -> list[dict[str, Any]]:
        return self.list_at(self.core.list_namespaced_pod, selector)[0]

    def list_at(self, method: Callable[..., Any], selector: str) -> tuple[list[dict[str, Any]], str]:
        """The objects ``selector`` picks (``method``: a ``list_namespaced_*``) and the list's
        ``resourceVersion`` (where a watch starts)."""
        answer = self.call(method, self.opts.namespace, label_selector=selector) or {}
        return list(answer.get("items") or []), str(
            (answer.get("metadata") or {}).get("resourceVersion") or ""
        )

    def watch(
        self, method: Callable[..., Any], selector: str, version: str, seconds: int
    ) -> Iterator[dict[str, Any]]:
        """Events (``{"type", "object"}``, the object as raw JSON) of what ``method`` (a
        ``list_namespaced_*``) lists, from ``version``, for at most ``seconds`` (the server ends the
        stream then).

        The request is made here: once this returns, the watch is open.  Raises ``WatchEnded``
        (here, or while iterating) when the watch fails rather than ends: an error answer, a
        broken stream, or an ``ERROR`` event (410 Gone when ``version`` is too old).  The stream
        is read line by line (the client's ``Watch`` would build model objects, and mis-reads an
        ``ERROR`` event without them)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            answer: Any = method(
                self.opts.namespace,
                label_selector=selector,
                resource_version=version or None,
                timeout_seconds=seconds,
                watch=True,
                _preload_content=False,
                _request_timeout=(REQUEST_TIMEOUT, seconds + REQUEST_TIMEOUT),
            )
        except ApiException as exc:
            raise WatchEnded(exc.status, _message(exc)) from exc
        except (HTTPError, OSError) as exc:
            raise WatchEnded(0, str(exc)) from exc
        return _events(answer)


def _events(answer: Any) -> Iterator[dict[str, Any]]:
    """The events of an open watch's answer, until its stream ends (closed then)."""
    from kubernetes.watch.watch import iter_resp_lines
    from urllib3.exceptions import HTTPError

    try:
        for line in iter_resp_lines(answer):
            if not line.strip():
                continue
            event = json.loads(line)
            if event.get("type") == "ERROR":
                status = event.get("object") or {}
                raise WatchEnded(int(status.get("code") or 0), str(status.get("message") or status))
            yield event
    except (HTTPError, OSError, ValueError, AttributeError) as exc:  # cut, or not JSON events
        raise WatchEnded(0, str(exc)) from exc
    finally:
        answer.close()
        answer.release_conn()


def _message(exc: Any) -> str:
    try:
        return str(json.loads(exc.body).get("message") or exc.reason)
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason)


__all__ = ["REQUEST_TIMEOUT", "KubeAPI", "KubeAPIError", "WatchEnded", "api_client"]
